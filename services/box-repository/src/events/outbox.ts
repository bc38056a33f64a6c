// Events go into the `events` table in the transaction of the change they describe, so an event exists exactly
// when its change committed. The webhook worker delivers them (marking delivered_at), inside the trace of the
// request that recorded them (its traceparent is kept with the event).
import { context, propagation } from '@opentelemetry/api';
import { sql, type CommonQueryMethods } from 'slonik';

/** The active trace context as a W3C traceparent, or null outside a trace. */
function currentTraceparent(): string | null {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent ?? null;
}

export type BoxEvent =
  | {
      type: 'box.uploaded';
      data: { organization: string; box: string; version: string; provider: string; architecture: string; file_name: string; sha256: string; size: number };
    }
  | { type: 'box.deleted'; data: { organization: string; box: string } }
  | { type: 'user.created'; data: { username: string } };

export async function recordEvent(connection: CommonQueryMethods, event: BoxEvent): Promise<void> {
  await connection.query(sql.unsafe`insert into events (type, data, traceparent) values (${event.type}, ${sql.jsonb(event.data)}, ${currentTraceparent()})`);
}

/** box.deleted for every box of an organization about to be deleted (before the cascade removes them). */
export async function recordOrganizationBoxesDeleted(connection: CommonQueryMethods, organizationId: number, organization: string): Promise<void> {
  await connection.query(sql.unsafe`
    insert into events (type, data, traceparent)
    select 'box.deleted', jsonb_build_object('organization', ${organization}::text, 'box', b.name), ${currentTraceparent()}::text
    from boxes b where b.organization_id = ${organizationId}`);
}
