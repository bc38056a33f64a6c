// Issue 27 item 5: a NUL in JSON, a query value or a path parameter answered 500 (PostgreSQL 22021) on about 20
// routes of the three services, several without signing in. Every operation each service publishes in its
// /openapi.json is called, anonymously and as an admin, with a NUL in every path parameter, every query
// parameter and every string of its JSON body (other members get plausible values, so the NUL is what reaches
// the route). Each answer must be a 4xx in the service's error shape: never a 5xx (a 5xx is what logs a stack).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '@boxyard/box-repository/testing/test-service.ts';
import { adminAuth, startTestShare, type TestShare } from '@boxyard/file-share/testing/test-share.ts';
import { ADMIN_PASSWORD, login, startTestGateway } from '@boxyard/terminal/testing/test-gateway.ts';
import { createTestDatabase } from '../harness/fixtures.ts';

interface Schema {
  type?: string | string[];
  properties?: Record<string, Schema>;
  items?: Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
}
interface Operation {
  parameters?: { name: string; in: string }[];
  requestBody?: { content: Record<string, { schema?: Schema }> };
}
type Spec = { paths: Record<string, Record<string, Operation>> };

const NUL = 'x\u0000y';

/** A value of `schema` with a NUL in every string. */
function hostile(schema: Schema | undefined, depth = 0): unknown {
  if (!schema || depth > 4) return NUL;
  const branch = schema.anyOf?.[0] ?? schema.oneOf?.[0] ?? schema.allOf?.[0];
  if (branch) return hostile(branch, depth + 1);
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
  if (type === 'integer' || type === 'number') return 1;
  if (type === 'boolean') return false;
  if (type === 'array') return [hostile(schema.items, depth + 1)];
  if (type === 'object' || schema.properties) {
    return Object.fromEntries(Object.entries(schema.properties ?? {}).map(([name, member]) => [name, hostile(member, depth + 1)]));
  }
  return NUL;
}

interface Call {
  name: string;
  method: string;
  url: string;
  body?: string;
  contentType?: string;
}

function hostileCalls(spec: Spec): Call[] {
  const calls: Call[] = [];
  for (const [template, operations] of Object.entries(spec.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      const path = template.replace(/\{[^{}]+\}/g, 'a%00b');
      const query = (operation.parameters ?? []).filter((p) => p.in === 'query').map((p) => `${encodeURIComponent(p.name)}=x%00y`);
      const content = operation.requestBody?.content ?? {};
      const json = content['application/json'];
      const form = content['application/x-www-form-urlencoded'];
      const call: Call = {
        name: `${method.toUpperCase()} ${template}`,
        method: method.toUpperCase(),
        url: `${path}${query.length ? `?${query.join('&')}` : ''}`,
      };
      if (json) Object.assign(call, { body: JSON.stringify(hostile(json.schema)), contentType: 'application/json' });
      else if (form) {
        const fields = hostile(form.schema) as Record<string, unknown>;
        Object.assign(call, {
          body: new URLSearchParams(Object.entries(fields).map(([k, v]): [string, string] => [k, String(v)])).toString(),
          contentType: 'application/x-www-form-urlencoded',
        });
      }
      calls.push(call);
    }
  }
  return calls;
}

interface Target {
  service: string;
  url: string;
  shape: 'problem' | 'envelope';
  credentials: Record<string, Record<string, string>>;
}

async function sweep(target: Target): Promise<{ calls: number; failures: string[] }> {
  const spec = (await (await fetch(`${target.url}/openapi.json`)).json()) as Spec;
  const calls = hostileCalls(spec);
  const failures: string[] = [];
  for (const [role, headers] of Object.entries(target.credentials)) {
    for (const call of calls) {
      const response = await fetch(`${target.url}${call.url}`, {
        method: call.method,
        headers: { ...headers, ...(call.contentType ? { 'content-type': call.contentType } : {}) },
        ...(call.body !== undefined ? { body: call.body } : {}),
        redirect: 'manual',
      });
      const text = await response.text();
      const type = response.headers.get('content-type') ?? '';
      const where = `${target.service} ${role} ${call.name} → ${response.status}`;
      if (response.status >= 500) failures.push(`${where} ${text.slice(0, 120)}`);
      else if (response.status >= 400) {
        const inShape =
          target.shape === 'problem'
            ? type.startsWith('application/problem+json') && (JSON.parse(text) as { status?: number }).status === response.status
            : type.startsWith('application/json') && (JSON.parse(text) as { success?: boolean }).success === false;
        if (!inShape) failures.push(`${where} not in the ${target.shape} shape: ${type} ${text.slice(0, 120)}`);
      }
    }
  }
  return { calls: calls.length, failures };
}

describe('a NUL in any input of any published route', () => {
  let boxes: TestService;
  let share: TestShare;
  let terminal: Awaited<ReturnType<typeof startTestGateway>>;
  beforeAll(async () => {
    [boxes, share, terminal] = await Promise.all([
      startTestService(),
      startTestShare({ storage: 'local' }),
      createTestDatabase('nul').then((url) => startTestGateway(url)),
    ]);
  });
  afterAll(async () => {
    await Promise.all([boxes?.close(), share?.close(), terminal?.close()]);
  });

  it('box repository: answers 4xx problem details, never 5xx, anonymous and as admin', async () => {
    const { calls, failures } = await sweep({
      service: 'box-repository',
      url: boxes.running.unencryptedUrl ?? boxes.url,
      shape: 'problem',
      credentials: { anonymous: {}, admin: { 'x-access-token': boxes.adminToken } },
    });
    expect(calls).toBeGreaterThan(50);
    expect(failures).toEqual([]);
  });

  it('file share: answers 4xx {success:false}, never 5xx, anonymous and as admin', async () => {
    const { calls, failures } = await sweep({
      service: 'file-share',
      url: share.url,
      shape: 'envelope',
      credentials: { anonymous: {}, admin: { authorization: adminAuth } },
    });
    expect(calls).toBeGreaterThan(10);
    expect(failures).toEqual([]);
  });

  it('terminal: answers 4xx {success:false}, never 5xx, anonymous and as admin', async () => {
    const cookie = await login(terminal.url, 'admin', ADMIN_PASSWORD);
    const { calls, failures } = await sweep({ service: 'terminal', url: terminal.url, shape: 'envelope', credentials: { anonymous: {}, admin: { cookie } } });
    expect(calls).toBeGreaterThan(10);
    expect(failures).toEqual([]);
  });
});
