// Organization memberships that follow an identity provider's groups (config `group_mapping.organizations`).
// Granted memberships are marked with their group: leaving the group removes them, and a membership given by
// hand is never changed. A sync runs when a user's groups differ from the last sync this process made (or five
// minutes later), so a request with a provider token costs no write in the steady state.
import { createHash } from 'node:crypto';
import { sql, type DatabasePool } from 'slonik';
import type { BoxRepositoryConfig } from '../config.ts';

type Mapping = BoxRepositoryConfig['group_mapping']['organizations'];
const rank = { user: 0, moderator: 1, admin: 2 } as const;
const RESYNC_MS = 5 * 60_000;
const MAX_REMEMBERED = 10_000;

/** The membership each mapped organization gets from these groups: the highest role any of them grants. */
export function grantedMemberships(mapping: Mapping, groups: readonly string[]): Map<string, { role: keyof typeof rank; group: string }> {
  const granted = new Map<string, { role: keyof typeof rank; group: string }>();
  for (const entry of mapping) {
    if (!groups.includes(entry.group)) continue;
    const key = entry.organization.toLowerCase();
    const current = granted.get(key);
    if (!current || rank[entry.role] > rank[current.role]) granted.set(key, { role: entry.role, group: entry.group });
  }
  return granted;
}

export function createGroupMembershipSync(pool: DatabasePool, mapping: Mapping) {
  const synced = new Map<string, { digest: string; at: number }>();

  async function sync(userId: string, groups: readonly string[]): Promise<void> {
    const granted = grantedMemberships(mapping, groups);
    await pool.transaction(async (tx) => {
      const names = [...granted.keys()];
      const organizations = names.length
        ? await tx.any(sql.unsafe`select id, lower(name) as key from organizations where lower(name) = any(${sql.array(names, 'text')})`)
        : [];
      const keep: number[] = [];
      for (const { id, key } of organizations as readonly { id: number; key: string }[]) {
        const grant = granted.get(key)!;
        keep.push(Number(id));
        await tx.query(sql.unsafe`
          insert into memberships (organization_id, user_id, role, from_provider_group) values (${id}, ${userId}, ${grant.role}, ${grant.group})
          on conflict (organization_id, user_id) do update set role = excluded.role, from_provider_group = excluded.from_provider_group
          where memberships.from_provider_group is not null`);
      }
      await tx.query(sql.unsafe`
        delete from memberships where user_id = ${userId} and from_provider_group is not null
          and not (organization_id = any(${sql.array(keep, 'int8')}))`);
    });
  }

  return {
    /** Brings the user's provider-granted memberships in line with `groups` (skipped when nothing changed). */
    async apply(userId: string, groups: readonly string[]): Promise<void> {
      if (mapping.length === 0) return;
      const digest = createHash('sha256')
        .update(JSON.stringify([...groups].sort()))
        .digest('base64url');
      const last = synced.get(userId);
      if (last && last.digest === digest && Date.now() - last.at < RESYNC_MS) return;
      await sync(userId, groups);
      if (synced.size >= MAX_REMEMBERED) synced.clear();
      synced.set(userId, { digest, at: Date.now() });
    },
  };
}
