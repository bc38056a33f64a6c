// Events go into the `events` table in the transaction of the change they describe, so an event exists exactly
// when its change committed. Part 2's webhook dispatcher delivers them (marking delivered_at).
import { sql, type CommonQueryMethods } from 'slonik';

export type BoxEvent =
  | { type: 'box.uploaded'; data: { organization: string; box: string; version: string; provider: string; architecture: string; file_name: string; sha256: string; size: number } }
  | { type: 'box.deleted'; data: { organization: string; box: string } };

export async function recordEvent(connection: CommonQueryMethods, event: BoxEvent): Promise<void> {
  await connection.query(sql.unsafe`insert into events (type, data) values (${event.type}, ${sql.jsonb(event.data)})`);
}

/** box.deleted for every box of an organization about to be deleted (before the cascade removes them). */
export async function recordOrganizationBoxesDeleted(connection: CommonQueryMethods, organizationId: number, organization: string): Promise<void> {
  await connection.query(sql.unsafe`
    insert into events (type, data)
    select 'box.deleted', jsonb_build_object('organization', ${organization}::text, 'box', b.name)
    from boxes b where b.organization_id = ${organizationId}`);
}
