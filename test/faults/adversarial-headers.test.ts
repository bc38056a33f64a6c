// Hostile header and query values (issue 27): `boxyard dev` hosts every service in one process, so one parser
// that backtracks super-linearly on a crafted value stops them all (a Range of `bytes=<spaces>-<spaces>x` took
// minutes on the box download). Each service gets, for every header and query parameter it reads itself or through
// its libraries, values close to node's 16 KiB header limit made of long runs of spaces, commas, digits, `=`,
// quotes and the pathological shape of each parser, while the other services are asked for /health over and over.
// Every hostile request must be answered, never with a 5xx (nor 431/414/429: the value must reach the parser), and
// every other service must keep answering meanwhile.
import { Agent as HttpAgent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeBox, sha256 } from '@boxyard/box-repository/testing/boxes.ts';
import { startDevProcess, type DevProcess } from '../harness/dev-process.ts';

const ADMIN_PASSWORD = 'Hostile-Input-Passw0rd';
const SERVICES = ['box-repository', 'file-share', 'terminal', 'second-service'] as const;
type Service = (typeof SERVICES)[number];

/**
 * Length of a hostile value: node refuses a request whose header section (request line and every header) passes
 * 16 KiB with 431, so the value keeps 1 KiB for the rest and still reaches the parser.
 */
const VALUE_LENGTH = 15 * 1024;
/** No answer in this long is a frozen process: a normal answer takes milliseconds, the bad parser minutes. */
const ANSWER_TIMEOUT_MS = 30_000;

/** `unit` repeated to fill VALUE_LENGTH between `head` and `tail`. */
function fill(unit: string, head = '', tail = '', length = VALUE_LENGTH): string {
  return head + unit.repeat(Math.floor((length - head.length - tail.length) / unit.length)) + tail;
}
/** Two runs of `unit` around `middle`, as a parser with two adjacent quantifiers would meet them. */
function twoRuns(head: string, unit: string, middle: string, tail: string): string {
  const run = unit.repeat(Math.floor((VALUE_LENGTH - head.length - middle.length - tail.length) / 2 / unit.length));
  return `${head}${run}${middle}${run}${tail}`;
}

// Runs any parser may meet. Leading and trailing whitespace is trimmed by node, so the runs are enclosed.
const GENERIC: Record<string, string> = {
  spaces: fill(' ', 'a', 'x'),
  tabs: fill(' \t', 'a', 'x'),
  commas: fill(','),
  digits: fill('9'),
  equals: fill('='),
  quotes: fill('"'),
  parameters: fill(';a=', 'a'),
  mixed: fill(' ,;="\\/', 'a', 'x'),
};

// The pathological shapes of each header's grammar.
const SPECIFIC: Record<string, Record<string, string>> = {
  range: {
    'spaces around the dash': twoRuns('bytes=', ' ', '-', 'x'),
    'tabs around the dash': twoRuns('BYTES=', '\t', '-', 'x'),
    'spaces around the equals sign': twoRuns('bytes', ' ', '=', '0-x'),
    'long first position': fill('0', 'bytes=', '-'),
    'long suffix': fill('9', 'bytes=-'),
    'many ranges': fill('0-0,', 'bytes='),
    'many dashes': fill('-', 'bytes=0'),
  },
  'if-none-match': { 'weak tags': fill('W/"a",'), 'open quote': fill('a', '"'), 'weak prefixes': fill('W/') },
  'if-range': { 'open quote': fill('a', '"'), 'weak prefixes': fill('W/'), 'date-like': fill('0 ', 'Mon, ', 'GMT') },
  'if-modified-since': { 'date-like': fill('0 ', 'Mon, ', 'GMT'), 'long year': fill('9', 'Mon, 01 Jan ') },
  accept: {
    'long q': fill('0', 'text/html;q=0.'),
    'many ranges': fill('*/*;q=0,'),
    'spaced parameters': twoRuns('text/html', ' ', ';', 'q=1'),
    'many slashes': fill('/', 'a'),
  },
  authorization: {
    'bearer spaces': twoRuns('Bearer a', ' ', 'a', '!'),
    'bearer padding': fill('=', 'Bearer a', '!'),
    'long bearer': fill('a', 'Bearer '),
    'dpop spaces': twoRuns('DPoP a', ' ', 'a', '!'),
    'basic long': `Basic ${Buffer.from(fill('a', 'admin:', '', Math.floor(VALUE_LENGTH * 0.7))).toString('base64')}`,
    'basic colons': `Basic ${Buffer.from(fill(':', '', '', Math.floor(VALUE_LENGTH * 0.7))).toString('base64')}`,
    'schemes only': fill('Bearer '),
  },
  cookie: {
    'many cookies': fill('a=b; '),
    'open quote': fill('a', 'auth_token="'),
    'percent runs': fill('%', 'auth_token='),
    'session padding': fill('=', 'session='),
  },
  'x-access-token': { dots: fill('a.'), 'jwt-like': fill('a', 'eyJ', '.b.c') },
  dpop: { dots: fill('a.'), 'jwt-like': fill('a', 'eyJ', '.b.c') },
  'content-type': {
    'long boundary': fill('-', 'multipart/form-data; boundary='),
    'quoted boundary': fill(' ', 'multipart/form-data; boundary="', 'x'),
    'many parameters': fill(' ;', 'application/json'),
    'charset quotes': fill('"', 'application/json; charset='),
  },
  origin: { 'many labels': fill('a.', 'https://'), 'many colons': fill(':', 'https://a') },
  'last-event-id': { 'spaced digits': twoRuns('1', ' ', '1', 'x') },
  'x-forwarded-for': { 'many hops': fill('1.1.1.1, '), 'ipv6 colons': fill(':', '[', ']') },
};

const valuesFor = (header: string) => ({ ...GENERIC, ...SPECIFIC[header] });

/** Query values: percent-encoded, so the URL keeps within the same limit. */
const QUERY_VALUES: Record<string, string> = {
  digits: fill('9'),
  spaces: encodeURIComponent(fill(' ', 'a', 'x', VALUE_LENGTH / 3)),
  commas: fill(','),
  equals: encodeURIComponent(fill('=', '', '', VALUE_LENGTH / 3)),
  quotes: encodeURIComponent(fill('"', '', '', VALUE_LENGTH / 3)),
  dots: fill('.'),
};

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** Bytes of an answer's body that are kept (enough for an error message). */
const KEPT = 300;

const agents = {
  http: new HttpAgent({ keepAlive: true, maxSockets: 4 }),
  https: new HttpsAgent({ keepAlive: true, maxSockets: 4, rejectUnauthorized: false }),
};

/**
 * One request; resolves with the status and the first KEPT characters of the body (the whole body with `whole`; a
 * download or an event stream is not read to its end), or rejects after ANSWER_TIMEOUT_MS.
 */
function send(url: string, init: { method?: string; headers?: Record<string, string>; body?: string | Buffer } = {}, whole = false): Promise<Answer> {
  const secure = url.startsWith('https:');
  return new Promise((resolve, reject) => {
    const req = (secure ? httpsRequest : httpRequest)(
      url,
      { method: init.method ?? 'GET', headers: init.headers, agent: secure ? agents.https : agents.http },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        const done = () => {
          clearTimeout(timer);
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: whole ? body : body.slice(0, KEPT) });
          res.destroy();
        };
        res.on('data', (chunk: string) => {
          body += chunk;
          if (!whole && body.length >= KEPT) done();
        });
        res.on('end', done);
        res.on('error', done);
        // Streams (events, downloads) answer with their headers; their bodies don't matter here.
        if (res.headers['content-type']?.startsWith('text/event-stream') || res.headers['content-type'] === 'application/octet-stream') done();
      },
    );
    const timer = setTimeout(() => {
      req.destroy();
      reject(new Error(`no answer in ${ANSWER_TIMEOUT_MS / 1000} s`));
    }, ANSWER_TIMEOUT_MS);
    req.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    req.end(init.body);
  });
}

/** A request whose header or query parameter gets the hostile values. */
interface Target {
  name: string;
  method?: string;
  path: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Headers that get hostile values (each alone, the others as in `headers`). */
  poison: string[];
  /** Query parameters that get hostile values. */
  query?: string[];
}

interface Installation {
  dev: DevProcess;
  targets: Record<Service, Target[]>;
}

/** A setup request that must succeed. */
async function succeeded(url: string, init: Parameters<typeof send>[1]): Promise<Answer> {
  const answer = await send(url, init, true);
  if (answer.status >= 300) throw new Error(`${init?.method ?? 'GET'} ${url}: ${answer.status} ${answer.body}`);
  return answer;
}

/** `boxyard dev` with a public box, a shared file and sessions on every service; the requests to attack. */
async function installation(): Promise<Installation> {
  // The limiter stays on (it runs before the parsers) with room for every request: a 429 would test nothing.
  const dev = await startDevProcess({ env: { BOXYARD_ADMIN_PASSWORD: ADMIN_PASSWORD, BOXYARD_RATE_LIMITING__MAX_REQUESTS: '1000000' } });
  const urls = dev.urls as Record<Service, string>;
  const jsonPost = { 'content-type': 'application/json' };

  // The box repository: a public box with one file.
  const boxes = urls['box-repository'];
  const signedIn = await succeeded(`${boxes}/api/auth/signin`, {
    method: 'POST',
    headers: jsonPost,
    body: JSON.stringify({ username: 'admin', password: ADMIN_PASSWORD }),
  });
  const token = (JSON.parse(signedIn.body) as { access_token: string }).access_token;
  const post = (path: string, body: unknown) =>
    succeeded(`${boxes}${path}`, { method: 'POST', headers: { ...jsonPost, 'x-access-token': token }, body: JSON.stringify(body) });
  await post('/api/organization', { name: 'acme' });
  await post('/api/organization/acme/box', { name: 'base', is_public: true });
  await post('/api/organization/acme/box/base/version', { version_number: '1.0.0' });
  await post('/api/organization/acme/box/base/version/1.0.0/provider', { name: 'virtualbox' });
  await post('/api/organization/acme/box/base/version/1.0.0/provider/virtualbox/architecture', { name: 'amd64' });
  await post('/api/organization/acme/box/base/version/1.0.0/provider/virtualbox/architecture', { name: 'arm64' }); // stays empty: uploads to it read every header
  const box = await makeBox();
  const architecture = '/api/organization/acme/box/base/version/1.0.0/provider/virtualbox/architecture/amd64';
  await succeeded(`${boxes}${architecture}/file/upload?checksum=${sha256(box)}&checksum_type=sha256`, {
    method: 'POST',
    headers: { 'content-type': 'application/octet-stream', 'x-file-name': 'base.box', 'x-access-token': token },
    body: box,
  });
  const download = '/acme/boxes/base/versions/1.0.0/providers/virtualbox/amd64/base.box';
  expect((await send(`${boxes}${download}`, { headers: { range: 'bytes=0-9' } })).status).toBe(206);

  // The file share: one file, and a session token.
  const files = urls['file-share'];
  const shareLogin = await succeeded(`${files}/auth/login/basic`, {
    method: 'POST',
    headers: jsonPost,
    body: JSON.stringify({ username: 'admin', password: ADMIN_PASSWORD }),
  });
  const bearer = `Bearer ${(JSON.parse(shareLogin.body) as { data: { token: string } }).data.token}`;
  const boundary = 'boxyard-hostile-input';
  const form = (name: string) =>
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: application/octet-stream\r\n\r\n${'x'.repeat(1024)}\r\n--${boundary}--\r\n`;
  expect(
    (
      await send(`${files}/notes.bin`, {
        method: 'POST',
        headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, authorization: bearer },
        body: form('notes.bin'),
      })
    ).status,
  ).toBe(201);

  // The terminal: a session cookie.
  const terminal = urls.terminal;
  const terminalLogin = await succeeded(`${terminal}/auth/login/basic`, {
    method: 'POST',
    headers: jsonPost,
    body: JSON.stringify({ username: 'admin', password: ADMIN_PASSWORD }),
  });
  const cookie = String(terminalLogin.headers['set-cookie']?.find((c) => c.startsWith('auth_token=')) ?? '').split(';')[0]!;
  expect(cookie.startsWith('auth_token=')).toBe(true);

  const browserHeaders = ['accept', 'cookie', 'origin', 'x-forwarded-for', 'x-forwarded-host', 'x-forwarded-proto', 'host'];
  const targets: Record<Service, Target[]> = {
    'box-repository': [
      {
        name: 'public download',
        path: download,
        poison: ['range', 'if-none-match', 'accept', 'authorization', 'x-access-token', 'cookie', 'x-forwarded-for'],
        query: ['access_token', 'expires', 'signature'],
      },
      { name: 'public download with a range', path: download, headers: { range: 'bytes=0-9' }, poison: ['if-range'] },
      { name: 'DPoP download', path: download, headers: { authorization: 'DPoP abc' }, poison: ['dpop'] },
      { name: 'Vagrant metadata', path: '/acme/base', poison: ['accept', 'if-none-match'] },
      { name: 'organization list', path: '/api/organization', headers: { 'x-access-token': token }, poison: [], query: ['page', 'per_page'] },
      { name: 'user search', path: '/api/admin/users', headers: { 'x-access-token': token }, poison: [], query: ['q', 'page', 'per_page'] },
      // Bodies the schema refuses: every header is read, and nothing is stored.
      {
        name: 'sign-in',
        method: 'POST',
        path: '/api/auth/signin',
        headers: jsonPost,
        body: '{"username":5}',
        poison: ['content-type', 'origin', 'sec-fetch-site'],
      },
      {
        name: 'raw upload (refused: not a box)',
        method: 'POST',
        path: `${architecture.replace('amd64', 'arm64')}/file/upload`,
        headers: { 'content-type': 'application/octet-stream', 'x-access-token': token, 'x-checksum-type': 'sha256', 'x-checksum': '0'.repeat(64) },
        body: 'not a box',
        poison: ['content-type', 'x-file-name', 'x-checksum', 'x-checksum-type', 'origin'],
        query: ['checksum', 'checksum_type', 'file_name', 'replace'],
      },
    ],
    'file-share': [
      {
        name: 'download',
        path: '/notes.bin',
        headers: { authorization: bearer },
        poison: ['range', 'if-none-match', 'if-modified-since', 'accept'],
        query: ['format'],
      },
      { name: 'download with a range', path: '/notes.bin', headers: { authorization: bearer, range: 'bytes=0-9' }, poison: ['if-range'] },
      { name: 'listing', path: '/', headers: { authorization: bearer }, poison: ['accept'], query: ['format', 'page', 'limit'] },
      { name: 'events', path: '/events', headers: { authorization: bearer }, poison: ['last-event-id'], query: ['lastEventId'] },
      { name: 'anonymous download', path: '/notes.bin', poison: ['authorization', 'cookie', 'dpop', 'x-forwarded-for'] },
      {
        name: 'upload',
        method: 'POST',
        path: '/hostile.bin',
        headers: { authorization: bearer, 'content-type': `multipart/form-data; boundary=${boundary}` },
        body: form('hostile.bin'),
        poison: ['content-type', 'origin', 'sec-fetch-site'],
      },
      { name: 'sign-in', method: 'POST', path: '/auth/login/basic', headers: jsonPost, body: '{"username":5}', poison: ['content-type', 'origin'] },
    ],
    terminal: [
      { name: 'session list', path: '/api/terminal/sessions', headers: { cookie }, poison: ['accept', 'x-forwarded-for'], query: ['include_ended'] },
      { name: 'anonymous session list', path: '/api/terminal/sessions', poison: ['authorization', 'cookie', 'dpop'] },
      {
        name: 'start with a refused body',
        method: 'POST',
        path: '/api/terminal/start',
        headers: { ...jsonPost, cookie },
        body: '{"terminal_cookie":5}',
        poison: ['content-type', 'origin', 'sec-fetch-site'],
      },
      { name: 'sign-in', method: 'POST', path: '/auth/login/basic', headers: jsonPost, body: '{"username":5}', poison: ['content-type', 'origin'] },
    ],
    'second-service': [
      { name: 'health', path: '/health', poison: [...browserHeaders, 'authorization'] },
      { name: 'OpenAPI description', path: '/api-docs/json', poison: ['accept', 'if-none-match'], query: ['format'] },
    ],
  };
  return { dev, targets };
}

/** Every hostile request of `targets`, as the label a failure names and the request to send. */
function hostileRequests(base: string, targets: Target[]) {
  const requests: { label: string; url: string; init: { method: string; headers: Record<string, string>; body?: string | Buffer } }[] = [];
  for (const target of targets) {
    const method = target.method ?? 'GET';
    for (const header of target.poison) {
      for (const [shape, value] of Object.entries(valuesFor(header))) {
        requests.push({
          label: `${target.name}: ${header} (${shape})`,
          url: `${base}${target.path}`,
          init: { method, headers: { ...target.headers, [header]: value }, ...(target.body !== undefined ? { body: target.body } : {}) },
        });
      }
    }
    for (const parameter of target.query ?? []) {
      for (const [shape, value] of Object.entries(QUERY_VALUES)) {
        requests.push({
          label: `${target.name}: ?${parameter} (${shape})`,
          url: `${base}${target.path}?${parameter}=${value}`,
          init: { method, headers: { ...target.headers }, ...(target.body !== undefined ? { body: target.body } : {}) },
        });
      }
    }
  }
  return requests;
}

/**
 * Sends the hostile requests to one service, four at a time, while each other service is asked for /health one
 * request after another; stops at the first request that gets no answer (the process is frozen: the rest would wait
 * as long). Returns the answers that are wrong and the health checks that failed or never ran.
 */
async function attack(installation: Installation, service: Service) {
  const urls = installation.dev.urls as Record<Service, string>;
  const requests = hostileRequests(urls[service], installation.targets[service]);
  const wrong: string[] = [];
  let attacking = true;
  let next = 0;
  const worker = async () => {
    while (attacking && next < requests.length) {
      const { label, url, init } = requests[next++]!;
      try {
        const { status, body } = await send(url, init);
        // 431 / 414: refused by node before any parser saw the value; 429: by the rate limit. Nothing was tested.
        if (status >= 500 || status < 200 || [414, 429, 431].includes(status)) wrong.push(`${label}: ${status} ${body}`);
      } catch (error) {
        wrong.push(`${label}: ${(error as Error).message}`);
        attacking = false;
      }
    }
  };
  const healthy: Record<string, number> = {};
  const unhealthy: string[] = [];
  const others = SERVICES.filter((other) => other !== service);
  const heartbeat = async (other: Service) => {
    healthy[other] = 0;
    do {
      try {
        const { status } = await send(`${urls[other]}/health`);
        if (status === 200) healthy[other]++;
        else unhealthy.push(`${other} /health: ${status}`);
      } catch (error) {
        unhealthy.push(`${other} /health: ${(error as Error).message}`);
        return;
      }
    } while (attacking);
  };
  const heartbeats = Promise.all(others.map(heartbeat));
  await Promise.all([worker(), worker(), worker(), worker()]);
  attacking = false;
  await heartbeats;
  return { sent: next, total: requests.length, wrong, unhealthy, healthy };
}

describe('hostile header and query values, against every service of one `boxyard dev`', () => {
  let running: Installation | undefined;

  beforeAll(async () => {
    running = await installation();
  }, 180_000);

  afterAll(async () => {
    agents.http.destroy();
    agents.https.destroy();
    await running?.dev.stop({ discard: true });
  }, 60_000);

  it.each(SERVICES)(
    '%s answers every hostile value with a 4xx or a normal answer, and the other services keep answering',
    async (service) => {
      const result = await attack(running!, service);
      expect(result.wrong).toEqual([]);
      expect(result.unhealthy).toEqual([]);
      expect(result.sent).toBe(result.total);
      // The other services answered while the attack ran (at least once each, and never failed).
      for (const other of SERVICES.filter((s) => s !== service)) expect(result.healthy[other], other).toBeGreaterThan(0);
    },
    300_000,
  );
});
