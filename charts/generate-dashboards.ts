// Writes the Grafana dashboards the chart ships (charts/boxyard/dashboards/*.json): one per service of the registry
// (@boxyard/registry) and one for the operator. Run `node charts/generate-dashboards.ts` after editing; test/observability checks the files are
// current and runs every panel's query against a real Prometheus scraping `boxyard dev` and an operator.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { kinds, services } from '@boxyard/registry';

export interface PanelSpec {
  title: string;
  unit: string;
  /** PromQL; `$__rate_interval` is Grafana's. */
  queries: { expr: string; legend: string }[];
  description?: string;
}

export interface DashboardSpec {
  file: string;
  uid: string;
  title: string;
  rows: { title: string; panels: PanelSpec[] }[];
}

const q = (expr: string, legend: string) => ({ expr, legend });

function httpRows(service: string, options: { rateLimited?: boolean } = {}): DashboardSpec['rows'] {
  const s = `service="${service}"`;
  return [
    {
      title: 'Requests',
      panels: [
        { title: 'Requests per second by route', unit: 'reqps', queries: [q(`sum by (route, method) (rate(http_request_duration_seconds_count{${s}}[$__rate_interval]))`, '{{method}} {{route}}')] },
        {
          title: 'Error ratio (5xx)',
          unit: 'percentunit',
          // `or vector(0)`: no 5xx series at all is a ratio of 0, not an empty panel.
          queries: [q(`(sum(rate(http_request_duration_seconds_count{${s},status_code=~"5.."}[$__rate_interval])) or vector(0)) / sum(rate(http_request_duration_seconds_count{${s}}[$__rate_interval]))`, 'errors')],
        },
        { title: 'Responses by status', unit: 'reqps', queries: [q(`sum by (status_code) (rate(http_request_duration_seconds_count{${s}}[$__rate_interval]))`, '{{status_code}}')] },
        {
          title: 'Latency p50 / p99 by route',
          unit: 's',
          queries: [
            q(`histogram_quantile(0.5, sum by (le, route) (rate(http_request_duration_seconds_bucket{${s}}[$__rate_interval])))`, 'p50 {{route}}'),
            q(`histogram_quantile(0.99, sum by (le, route) (rate(http_request_duration_seconds_bucket{${s}}[$__rate_interval])))`, 'p99 {{route}}'),
          ],
        },
        ...(options.rateLimited === false ? [] : [{ title: 'Rate-limit refusals (429)', unit: 'reqps', queries: [q(`sum(rate(boxyard_rate_limit_refusals_total{${s}}[$__rate_interval]))`, 'refused')] }]),
      ],
    },
  ];
}

function storageRow(service: string): DashboardSpec['rows'][number] {
  const s = `service="${service}"`;
  return {
    title: 'Storage',
    panels: [
      {
        title: 'Bytes uploaded / downloaded',
        unit: 'Bps',
        queries: [q(`sum(rate(boxyard_upload_bytes_total{${s}}[$__rate_interval]))`, 'uploaded'), q(`sum(rate(boxyard_download_bytes_total{${s}}[$__rate_interval]))`, 'downloaded')],
      },
      { title: 'Upload failures by reason', unit: 'short', queries: [q(`sum by (reason) (increase(boxyard_upload_failures_total{${s}}[$__rate_interval]))`, '{{reason}}')] },
      { title: 'Storage errors by operation', unit: 'short', queries: [q(`sum by (operation) (increase(boxyard_storage_errors_total{${s}}[$__rate_interval]))`, '{{operation}}')] },
    ],
  };
}

function databaseAndProcessRow(service: string): DashboardSpec['rows'][number] {
  const s = `service="${service}"`;
  return {
    title: 'Database and process',
    panels: [
      { title: 'Database errors by reason', unit: 'short', queries: [q(`sum by (reason) (increase(boxyard_database_errors_total{${s}}[$__rate_interval]))`, '{{reason}}')] },
      { title: 'Resident memory', unit: 'bytes', queries: [q(`process_resident_memory_bytes{${s}}`, '{{instance}}')] },
      { title: 'CPU', unit: 'percentunit', queries: [q(`rate(process_cpu_seconds_total{${s}}[$__rate_interval])`, '{{instance}}')] },
      { title: 'Event loop lag p99', unit: 's', queries: [q(`nodejs_eventloop_lag_p99_seconds{${s}}`, '{{instance}}')] },
    ],
  };
}

/** What a service's dashboard shows besides requests, storage (for kinds that use it), database and process. */
const ownRows: Record<string, DashboardSpec['rows']> = {
  'box-repository': [
    {
      title: 'Webhooks',
      panels: [
        { title: 'Webhook deliveries by outcome', unit: 'short', queries: [q('sum by (outcome) (increase(boxyard_webhook_deliveries_total{service="box-repository"}[$__rate_interval]))', '{{outcome}}')] },
        { title: 'Failed delivery attempts by reason', unit: 'short', queries: [q('sum by (reason) (increase(boxyard_webhook_delivery_failures_total{service="box-repository"}[$__rate_interval]))', '{{reason}}')] },
        {
          title: 'Webhook backlog',
          unit: 'short',
          description: 'Deliveries waiting (new or retrying) plus events not yet fanned out, read from PostgreSQL by every replica: max, not sum.',
          queries: [q('max(boxyard_webhook_backlog{service="box-repository"})', 'waiting')],
        },
      ],
    },
  ],
  'file-share': [{ title: 'Live events', panels: [{ title: 'SSE subscribers', unit: 'short', queries: [q('sum(boxyard_sse_subscribers{service="file-share"})', 'subscribers')] }] }],
  terminal: [
    {
      title: 'Sessions',
      panels: [
        {
          title: 'Active sessions by backend',
          unit: 'short',
          description: 'Read from PostgreSQL by every gateway replica: max, not sum.',
          queries: [q('max by (backend, state) (boxyard_terminal_sessions_active{service="terminal"})', '{{backend}} {{state}}')],
        },
        {
          title: 'Session start latency p50 / p99',
          unit: 's',
          queries: [
            q('histogram_quantile(0.5, sum by (le, backend) (rate(boxyard_terminal_session_start_duration_seconds_bucket{service="terminal"}[$__rate_interval])))', 'p50 {{backend}}'),
            q('histogram_quantile(0.99, sum by (le, backend) (rate(boxyard_terminal_session_start_duration_seconds_bucket{service="terminal"}[$__rate_interval])))', 'p99 {{backend}}'),
          ],
        },
        { title: 'Session starts by outcome', unit: 'short', queries: [q('sum by (backend, outcome) (increase(boxyard_terminal_session_start_duration_seconds_count{service="terminal"}[$__rate_interval]))', '{{backend}} {{outcome}}')] },
      ],
    },
  ],
};

/** The second service has neither a database nor a rate limit: requests and the process only. */
const withoutDatabase = new Set(['second-service']);

/** "box-repository" -> "Box repository". */
const titleOf = (service: string) => service.charAt(0).toUpperCase() + service.slice(1).replaceAll('-', ' ');

/** One dashboard per service of the registry, in its order; storage panels for the kinds that use object storage. */
function serviceDashboard(service: string): DashboardSpec {
  const plain = withoutDatabase.has(service);
  const storage = kinds.some((k) => k.service === service && k.storage);
  return {
    file: `${service}.json`,
    uid: `boxyard-${service}`,
    title: `Boxyard / ${titleOf(service)}`,
    rows: [
      ...httpRows(service, plain ? { rateLimited: false } : {}),
      ...(storage ? [storageRow(service)] : []),
      ...(ownRows[service] ?? []),
      plain ? { title: 'Process', panels: databaseAndProcessRow(service).panels.slice(1) } : databaseAndProcessRow(service),
    ],
  };
}

export const dashboards: DashboardSpec[] = [
  ...services.map((s) => serviceDashboard(s.name)),
  {
    file: 'operator.json',
    uid: 'boxyard-operator',
    title: 'Boxyard / Operator',
    rows: [
      {
        title: 'Reconciles',
        panels: [
          { title: 'Reconciles per second by result', unit: 'ops', queries: [q('sum by (controller, result) (rate(controller_runtime_reconcile_total[$__rate_interval]))', '{{controller}} {{result}}')] },
          { title: 'Reconcile errors', unit: 'ops', queries: [q('sum by (controller) (rate(controller_runtime_reconcile_errors_total[$__rate_interval]))', '{{controller}}')] },
          {
            title: 'Reconcile duration p50 / p99',
            unit: 's',
            queries: [
              q('histogram_quantile(0.5, sum by (le, controller) (rate(controller_runtime_reconcile_time_seconds_bucket[$__rate_interval])))', 'p50 {{controller}}'),
              q('histogram_quantile(0.99, sum by (le, controller) (rate(controller_runtime_reconcile_time_seconds_bucket[$__rate_interval])))', 'p99 {{controller}}'),
            ],
          },
          { title: 'Busy workers', unit: 'short', queries: [q('sum by (controller) (controller_runtime_active_workers)', '{{controller}}'), q('sum by (controller) (controller_runtime_max_concurrent_reconciles)', 'max {{controller}}')] },
        ],
      },
      {
        title: 'Work queues',
        panels: [
          { title: 'Queue depth', unit: 'short', queries: [q('sum by (name) (workqueue_depth)', '{{name}}')] },
          { title: 'Queue latency p99 (wait for a worker)', unit: 's', queries: [q('histogram_quantile(0.99, sum by (le, name) (rate(workqueue_queue_duration_seconds_bucket[$__rate_interval])))', '{{name}}')] },
          { title: 'Adds and retries', unit: 'ops', queries: [q('sum by (name) (rate(workqueue_adds_total[$__rate_interval]))', 'adds {{name}}'), q('sum by (name) (rate(workqueue_retries_total[$__rate_interval]))', 'retries {{name}}')] },
          { title: 'Longest running reconcile', unit: 's', queries: [q('max by (name) (workqueue_longest_running_processor_seconds)', '{{name}}')] },
        ],
      },
      {
        title: 'Kubernetes API and process',
        panels: [
          { title: 'API requests by verb and code', unit: 'reqps', queries: [q('sum by (verb, code) (rate(boxyard_operator_api_requests_total[$__rate_interval]))', '{{verb}} {{code}}')] },
          { title: 'Watch restarts', unit: 'short', queries: [q('sum by (resource, reason) (increase(boxyard_operator_watch_restarts_total[$__rate_interval]))', '{{resource}} {{reason}}')] },
          { title: 'Leader', unit: 'short', queries: [q('max by (instance) (boxyard_operator_leader)', '{{instance}}')] },
          { title: 'Resident memory', unit: 'bytes', queries: [q('process_resident_memory_bytes{app="boxyard-operator"}', '{{instance}}')] },
        ],
      },
    ],
  },
];

/** The Grafana dashboard model (schema 39) for one spec: a row per group, four panels across. */
export function renderDashboard(spec: DashboardSpec): object {
  const datasource = { type: 'prometheus', uid: '${datasource}' };
  const panels: object[] = [];
  let id = 1;
  let y = 0;
  for (const row of spec.rows) {
    panels.push({ id: id++, type: 'row', title: row.title, collapsed: false, gridPos: { h: 1, w: 24, x: 0, y }, panels: [] });
    y += 1;
    row.panels.forEach((panel, i) => {
      panels.push({
        id: id++,
        type: 'timeseries',
        title: panel.title,
        ...(panel.description ? { description: panel.description } : {}),
        datasource,
        gridPos: { h: 8, w: 6, x: (i % 4) * 6, y: y + Math.floor(i / 4) * 8 },
        fieldConfig: { defaults: { unit: panel.unit }, overrides: [] },
        options: { legend: { displayMode: 'list', placement: 'bottom', showLegend: true }, tooltip: { mode: 'multi', sort: 'desc' } },
        targets: panel.queries.map((query, n) => ({ refId: String.fromCharCode(65 + n), datasource, expr: query.expr, legendFormat: query.legend, range: true })),
      });
    });
    y += Math.ceil(row.panels.length / 4) * 8;
  }
  return {
    uid: spec.uid,
    title: spec.title,
    tags: ['boxyard'],
    timezone: 'browser',
    schemaVersion: 39,
    version: 1,
    editable: true,
    refresh: '30s',
    time: { from: 'now-1h', to: 'now' },
    templating: { list: [{ name: 'datasource', label: 'Data source', type: 'datasource', query: 'prometheus', current: {}, hide: 0 }] },
    annotations: { list: [] },
    panels,
  };
}

export const dashboardsDir = fileURLToPath(new URL('./boxyard/dashboards/', import.meta.url));
export const renderedFile = (spec: DashboardSpec) => `${JSON.stringify(renderDashboard(spec), null, 2)}\n`;

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const spec of dashboards) writeFileSync(`${dashboardsDir}${spec.file}`, renderedFile(spec));
  console.log(`wrote ${dashboards.length} dashboards to ${dashboardsDir}`);
}
