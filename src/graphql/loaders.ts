import DataLoader from 'dataloader';
import type { Em } from '../infra/database/orm.js';
import { isUuid } from '../common/uuid.js';
import { Organization } from '../organizations/organization.entity.js';
import { User } from '../organizations/user.entity.js';

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
    user: byId((ids) => em.find(User, { id: { $in: ids } })),
  };
}

export type Loaders = ReturnType<typeof createLoaders>;
