// The app `make bench`'s auth section measures, in a process of its own (its CPU is not the load generator's):
// one route that accepts what a service will accept, in the order a service tries it: the provider's tokens
// when the resource server recognizes them (Bearer JWT of the provider, DPoP), else the service's session JWT.
// Configured by environment: BENCH_ISSUER, BENCH_AUDIENCE, BENCH_DATABASE_URL, BENCH_SESSION_SECRET, BENCH_PORT.
import { createApp, createDatabasePool, createResourceServer, createSessionTokens, resourceServerSchema, unauthorized } from '@boxyard/kit/index.ts';

const env = (name: string) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
};

const pool = await createDatabasePool({ url: env('BENCH_DATABASE_URL'), schema: 'svc', poolSize: 10 });
const app = await createApp({ service: 'bench-auth', version: '1', errorShape: 'problem', logLevel: 'warn', openapi: { title: 'bench' } });
const sessions = createSessionTokens({
  secrets: [env('BENCH_SESSION_SECRET')],
  issuer: 'boxyard',
  audience: 'bench-auth',
  typ: 'boxyard-session+jwt',
  ttlSeconds: 3600,
});
const provider = createResourceServer(resourceServerSchema.parse({ enabled: true, issuer: env('BENCH_ISSUER'), audience: env('BENCH_AUDIENCE') }), {
  pool,
  publicUrl: `http://127.0.0.1:${env('BENCH_PORT')}`,
  log: app.log,
});

app.get('/api/whoami', async (request, reply) => {
  if (provider.recognizes(request)) return { subject: (await provider.verify(request, reply)).subject };
  const token = /^Bearer (\S+)$/.exec(request.headers.authorization ?? '')?.[1];
  if (!token) throw unauthorized();
  try {
    return { subject: (await sessions.verify(token)).sub };
  } catch {
    throw unauthorized('Invalid session token');
  }
});

await app.listen({ host: '127.0.0.1', port: Number(env('BENCH_PORT')) });
console.log('listening');
process.on(
  'SIGTERM',
  () =>
    void app
      .close()
      .then(() => pool.end())
      .then(() => process.exit(0)),
);
