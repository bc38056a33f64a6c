// The chart's dashboards and alerts as a platform team installs them: off by default, ConfigMaps labelled for
// Grafana's sidecar and a PrometheusRule when enabled, the shipped files current with their generator, and every
// alert unit-tested with `promtool test rules` (firing and staying quiet). Their queries run against a real
// Prometheus in prometheus.test.ts.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { services } from '@boxyard/registry';
import { dashboards, dashboardsDir, renderedFile } from '../../charts/generate-dashboards.ts';
import { chartDir, renderChart } from '@boxyard/operator/test/support.ts';

const run = promisify(execFile);
const rulesFile = join(chartDir, 'rules', 'boxyard.rules.yaml');
const rulesTestFile = join(chartDir, 'rules', 'boxyard.rules.test.yaml');
interface RuleGroups {
  groups: { name: string; rules: { alert?: string; expr: string }[] }[];
}
const rules = parse(readFileSync(rulesFile, 'utf8')) as RuleGroups;
const alertNames = [...new Set(rules.groups.flatMap((g) => g.rules.map((r) => r.alert).filter((a): a is string => !!a)))];

describe('the chart ships dashboards and alerts', () => {
  it('renders neither by default, and both when enabled', async () => {
    const plain = await renderChart('boxyard-system');
    expect(plain.objects.filter((o) => o.kind === 'PrometheusRule' || (o.kind === 'ConfigMap' && o.metadata.name.includes('dashboard')))).toEqual([]);

    const { objects } = await renderChart('boxyard-system', [
      'metrics.dashboards.enabled=true',
      'metrics.prometheusRule.enabled=true',
      'metrics.prometheusRule.labels.release=monitoring',
    ]);
    const maps = objects.filter((o) => o.kind === 'ConfigMap') as unknown as {
      metadata: { name: string; labels: Record<string, string> };
      data: Record<string, string>;
    }[];
    expect(maps.map((m) => m.metadata.name).sort()).toEqual(dashboards.map((d) => `boxyard-dashboard-${d.file.replace('.json', '')}`).sort());
    for (const map of maps) {
      expect(map.metadata.labels.grafana_dashboard).toBe('1');
      const [[file, json]] = Object.entries(map.data) as [[string, string]];
      const dashboard = JSON.parse(json) as { uid: string; panels: unknown[] };
      expect(dashboards.map((d) => d.uid)).toContain(dashboard.uid);
      expect(file).toBe(`${dashboard.uid}.json`);
    }
    const rule = objects.find((o) => o.kind === 'PrometheusRule') as unknown as { metadata: { labels: Record<string, string> }; spec: RuleGroups };
    expect(rule.metadata.labels.release).toBe('monitoring');
    expect(rule.spec).toEqual(rules); // exactly the file promtool tests
  });

  it('watches every service of the registry: a target-down alert and a dashboard for each', () => {
    const targetDown = rules.groups.flatMap((g) => g.rules).find((r) => r.alert === 'BoxyardTargetDown')!;
    const containers = /container=~"([^"]+)"/.exec(targetDown.expr)![1]!.split('|');
    for (const { name } of services) {
      expect(containers, `${name}: add it to BoxyardTargetDown in ${rulesFile}`).toContain(name);
      expect(dashboards.map((d) => d.file)).toContain(`${name}.json`);
    }
  });

  it('ships the dashboards its generator writes', () => {
    for (const spec of dashboards)
      expect(readFileSync(join(dashboardsDir, spec.file), 'utf8'), `${spec.file}: run node charts/generate-dashboards.ts`).toBe(renderedFile(spec));
  });

  it('has valid alert rules and a promtool unit test for every alert, and they pass', async () => {
    await run('promtool', ['check', 'rules', rulesFile]);
    const tests = parse(readFileSync(rulesTestFile, 'utf8')) as { tests: { alert_rule_test: { alertname: string; exp_alerts?: unknown[] }[] }[] };
    const cases = tests.tests.flatMap((t) => t.alert_rule_test);
    for (const alert of alertNames) {
      expect(
        cases.some((c) => c.alertname === alert && (c.exp_alerts?.length ?? 0) > 0),
        `${alert} fires in a test`,
      ).toBe(true);
      expect(
        cases.some((c) => c.alertname === alert && !c.exp_alerts?.length),
        `${alert} stays quiet in a test`,
      ).toBe(true);
    }
    const { stdout } = await run('promtool', ['test', 'rules', rulesTestFile]).catch((error: { stdout?: string; stderr?: string }) => {
      throw new Error(`promtool test rules failed:\n${error.stdout ?? ''}${error.stderr ?? ''}`);
    });
    expect(stdout).toContain('SUCCESS');
  });
});
