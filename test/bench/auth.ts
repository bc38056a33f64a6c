// `make bench` section `auth`: verified requests/s on one route (test/bench/auth-server.ts, its own process) for
// the service's session JWT (HS256, the baseline), a provider Bearer token (RFC 9068 JWT, ES256 against the
// cached JWKS) and a provider DPoP-bound token (the JWT, a DPoP proof per request, and its jti inserted into the
// PostgreSQL replay table). Proofs are made before the clock starts: a client's signing is not the server's cost.
// Clients reuse their token, as real ones do, so the verifier's cache of verified tokens applies to Bearer and
// DPoP alike; each DPoP request still checks a new proof. Variants run interleaved, three times each (median),
// so drift on the shared machine hits all of them alike.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { Agent, request as httpRequest, type IncomingMessage } from 'node:http';
import { fileURLToPath } from 'node:url';
import { createSessionTokens, migrate, resourceServerMigrations } from '@boxyard/kit/index.ts';
import { freePort } from '@boxyard/kit/net/free-port.ts';
import { dpopProof, newDpopKey, startOidcProvider } from '../harness/oidc-provider.ts';
import { createBenchDatabase, type BenchEnv, type BenchRow } from './env.ts';

const SECONDS_PER_RUN = 2;
const CONCURRENCY = 16;
/** More than a run of the variants that need a new credential per request can use; a run that runs out stops
 * early (its rate stays right). */
const CREDENTIALS_PER_RUN = 5_000;
const GOALS = { bearer: 0.5, bearerNew: 0.3, dpop: 0.3 };
const AUDIENCE = 'https://bench.example.test';
const SERVER = fileURLToPath(new URL('./auth-server.ts', import.meta.url));

const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** Requests/s of GET `url` with the headers `next()` gives each request, every answer checked to be a 200. */
async function rate(url: string, agent: Agent, next: () => Record<string, string> | undefined): Promise<number> {
  const deadline = Date.now() + SECONDS_PER_RUN * 1000;
  let count = 0;
  const started = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let headers = next(); headers && Date.now() < deadline; headers = next()) {
        const request = httpRequest(url, { agent, headers });
        request.end();
        const [response] = (await once(request, 'response')) as [IncomingMessage];
        response.resume();
        await once(response, 'end');
        // A refused request would look fast: every one must have been verified.
        if (response.statusCode !== 200) throw new Error(`GET ${url}: ${response.statusCode} ${response.headers['www-authenticate'] ?? ''}`);
        count++;
      }
    }),
  );
  return count / (Number(process.hrtime.bigint() - started) / 1e9);
}

export async function benchAuth(env: BenchEnv): Promise<BenchRow[]> {
  const idp = await startOidcProvider({ resources: [AUDIENCE] });
  const databaseUrl = await createBenchDatabase(env, `bench_auth_${randomBytes(4).toString('hex')}`);
  await migrate(databaseUrl, 'svc', [resourceServerMigrations]);
  const port = await freePort();
  const secret = randomBytes(32).toString('base64url');
  const child = spawn(process.execPath, [SERVER], {
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      BENCH_ISSUER: idp.issuer,
      BENCH_AUDIENCE: AUDIENCE,
      BENCH_DATABASE_URL: databaseUrl,
      BENCH_SESSION_SECRET: secret,
      BENCH_PORT: String(port),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  try {
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('listening') && resolve());
      child.once('exit', (code) => reject(new Error(`bench auth server exited with ${code}`)));
    });
    const url = `http://127.0.0.1:${port}/api/whoami`;
    const session = (
      await createSessionTokens({ secrets: [secret], issuer: 'boxyard', audience: 'bench-auth', typ: 'boxyard-session+jwt', ttlSeconds: 3600 }).sign('alice')
    ).token;
    const bearer = await idp.token({ resource: AUDIENCE });
    const key = await newDpopKey();
    const bound = await idp.token({ resource: AUDIENCE, dpop: key });

    const variants = {
      session: () => () => ({ authorization: `Bearer ${session}` }),
      bearer: () => () => ({ authorization: `Bearer ${bearer}` }),
      // Tokens the provider's key signed, each seen once: the signature check without the cache.
      bearerNew: async () => {
        const now = Math.floor(Date.now() / 1000);
        const claims = { iss: idp.issuer, aud: AUDIENCE, sub: 'alice', client_id: idp.client.client_id, iat: now, exp: now + 600 };
        const tokens = await Promise.all(
          Array.from({ length: CREDENTIALS_PER_RUN }, () => idp.sign({ ...claims, jti: randomBytes(12).toString('base64url') })),
        );
        return () => {
          const token = tokens.pop();
          return token ? { authorization: `Bearer ${token}` } : undefined;
        };
      },
      dpop: async () => {
        const proofs = await Promise.all(Array.from({ length: CREDENTIALS_PER_RUN }, () => dpopProof(key, { htm: 'GET', htu: url, accessToken: bound })));
        return () => {
          const proof = proofs.pop();
          return proof ? { authorization: `DPoP ${bound}`, dpop: proof } : undefined;
        };
      },
    };
    const rates: Record<keyof typeof variants, number[]> = { session: [], bearer: [], bearerNew: [], dpop: [] };
    const order: (keyof typeof variants)[] = [
      'session',
      'bearer',
      'bearerNew',
      'dpop',
      'dpop',
      'bearerNew',
      'session',
      'bearer',
      'bearer',
      'dpop',
      'session',
      'bearerNew',
    ];
    // Warm-up: JIT, the JWKS fetch, the database connections.
    for (const name of ['session', 'bearer', 'bearerNew', 'dpop'] as const) {
      const next = await variants[name]();
      let left = 300;
      await rate(url, agent, () => (left-- > 0 ? next() : undefined));
    }
    for (const name of order) rates[name].push(await rate(url, agent, await variants[name]()));

    const baseline = median(rates.session);
    const row = (name: string, value: number, goal?: number): BenchRow => {
      const ratio = value / baseline;
      const verdict = goal === undefined ? '' : ` (goal ≥ ${goal.toFixed(2)}×: ${ratio >= goal ? 'PASS' : 'FAIL'})`;
      return { name: `${name}${verdict}`, value: round(value), unit: 'req/s', baseline: round(baseline), ratio: round(ratio, 3) };
    };
    return [
      row('session JWT (HS256) — the baseline', baseline),
      row('provider Bearer JWT, token reused (cached verification)', median(rates.bearer), GOALS.bearer),
      row('provider Bearer JWT, a new token each time (ES256 check)', median(rates.bearerNew), GOALS.bearerNew),
      row('provider DPoP: token reused, new proof + jti into PostgreSQL', median(rates.dpop), GOALS.dpop),
    ];
  } finally {
    agent.destroy();
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await once(child, 'exit');
    }
    await idp.stop();
  }
}
