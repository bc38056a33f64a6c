// The second service's access matrix: it has no accounts, so its one role is the anonymous caller (a caller
// sending credentials meant for another service is the same to it); every route it serves (the kit's health,
// metrics and OpenAPI routes) is checked against its route table over its real HTTPS listener.
import { request } from 'node:https';
import { afterAll, beforeAll } from 'vitest';
import { describeAccessMatrix, type RoleSpec } from '@boxyard/test/harness/access-matrix.ts';
import { operationalRows } from '@boxyard/test/harness/operational-rows.ts';
import { startSecondService, type SecondService } from './service.ts';
import { secondServiceConfigSchema } from './config.ts';

type Role = 'anonymous' | 'foreignCredential';
const ROLES: RoleSpec<Role>[] = [{ name: 'anonymous' }, { name: 'foreignCredential' }];
const HEADERS: Record<Role, Record<string, string>> = { anonymous: {}, foreignCredential: { authorization: 'Bearer not-for-this-service' } };

let service: SecondService;

/** The status of one request over HTTPS (the certificate is the service's self-signed one). */
const send = (role: Role, method: string, path: string) =>
  new Promise<number>((resolve, reject) => {
    const sent = request(`${service.url}${path}`, { method, headers: HEADERS[role], rejectUnauthorized: false }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode ?? 0));
    });
    sent.on('error', reject);
    sent.end();
  });

beforeAll(async () => {
  service = await startSecondService(secondServiceConfigSchema.parse({ server: { host: '127.0.0.1', port: 0 }, logging: { level: 'silent' } }));
});
afterAll(async () => service?.close());

describeAccessMatrix<Role>({
  service: 'second-service',
  roles: ROLES,
  routeTable: () => service?.app.routeTable ?? [],
  rows: () => operationalRows(ROLES, send),
});
