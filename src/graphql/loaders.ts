import DataLoader from 'dataloader';
import type { Em } from '../infra/database/orm.js';
import { isUuid } from '../common/uuid.js';
import { Organization } from '../organizations/organization.entity.js';
import { activeSkipTraceKeys, type SkipTraceKeyInfo } from '../skip-trace/keys/skip-trace-keys.service.js';

/** Batches lookups by id within one request, so nested fields never issue one query per row. */
export function createLoaders(em: Em) {
  const byId = <T extends { id: string }>(load: (ids: string[]) => Promise<T[]>) =>
    new DataLoader<string, T | null>(async (ids) => {
      const valid = ids.filter(isUuid);
      const rows = valid.length ? await load(valid) : [];
      const found = new Map(rows.map((row) => [row.id, row]));
      return ids.map((id) => found.get(id) ?? null);
    });
  return {
    organization: byId((ids) => em.find(Organization, { id: { $in: ids } })),
    skipTraceKeyByOrganization: new DataLoader<string, SkipTraceKeyInfo | null>(async (organizationIds) => {
      const keys = await activeSkipTraceKeys(em, organizationIds.filter(isUuid));
      return organizationIds.map((id) => keys.get(id) ?? null);
    }),
  };
}

export type Loaders = ReturnType<typeof createLoaders>;
