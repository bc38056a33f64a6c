// Requests may spell members the seed's camelCase way (`isPublic`, `versionNumber`, `defaultBox`,
// `stayLoggedIn`); the routes' schemas use snake_case, so top-level body and query members are renamed before
// validation. When both spellings are sent, the snake_case one wins.
import type { FastifyInstance } from 'fastify';

export const toSnakeCase = (key: string): string => key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

function renameMembers(value: unknown): void {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return;
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (!/[A-Z]/.test(key)) continue;
    const snake = toSnakeCase(key);
    if (!(snake in record)) record[snake] = record[key];
    delete record[key];
  }
}

export function acceptCamelCase(app: FastifyInstance): void {
  app.addHook('preValidation', async (request) => {
    renameMembers(request.body);
    renameMembers(request.query);
  });
}
