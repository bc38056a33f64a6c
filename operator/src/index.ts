// The Boxyard operator. `boxyard operator` calls operatorCli(argv); embedders and tests call runOperator().
export { runOperator, DEFAULT_IMAGE, type OperatorOptions, type RunningOperator, type LeaderElectionSettings } from './operator.ts';
export { operatorCli, parseOperatorArgs, operatorUsage, OperatorUsageError } from './cli.ts';
