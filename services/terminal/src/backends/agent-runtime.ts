// A local agent runs with the gateway's own V8 heap flags and glibc malloc settings, as a session pod's agent gets
// them from the image's launcher (services/boxyard/node-flags says why each one matters): the same memory and GC
// behaviour whichever backend starts it. Only those: the gateway's inspector, profiler, eval or loader flags are
// not the agent's (a second --inspect on the same port would collide), and nothing else of its environment goes.
const HEAP_FLAG = /^--(max|min)[-_]semi[-_]space[-_]size=\d+$|^--max[-_]old[-_]space[-_]size=\d+$|^--external[-_]memory[-_]accounted[-_]in[-_]global[-_]limit$/;
const MALLOC_SETTINGS = ['MALLOC_ARENA_MAX', 'MALLOC_MMAP_THRESHOLD_'] as const;

export interface AgentRuntime {
  /** Node/V8 flags to put before the agent's script. */
  flags: string[];
  /** Variables to add to the agent's (otherwise clean) environment. */
  env: Record<string, string>;
}

export function agentRuntime(execArgv: readonly string[], env: NodeJS.ProcessEnv): AgentRuntime {
  const malloc: Record<string, string> = {};
  for (const name of MALLOC_SETTINGS) {
    const value = env[name];
    if (value && /^\d+$/.test(value)) malloc[name] = value;
  }
  return { flags: execArgv.filter((flag) => HEAP_FLAG.test(flag)), env: malloc };
}
