import type { ObjectRef } from '@pothos/core';
import { builder, type BuilderTypes } from './builder.js';
import { constraints } from './constraints.js';
import { LISTING_PAGE_SIZE, type Page } from '../common/keyset-page.js';

/** A listing page type: `{nodes, nextCursor}`, newest first (`common/keyset-page.ts`). */
export function pageRef<T>(name: string, nodeRef: ObjectRef<BuilderTypes, T>) {
  return builder.objectRef<Page<T>>(name).implement({
    fields: (t) => ({
      nodes: t.field({ type: [nodeRef], description: 'Newest first.', resolve: (page) => page.nodes }),
      nextCursor: t.exposeString('nextCursor', {
        nullable: true,
        description: 'Pass as `after` for the next page; null on the last page.',
      }),
    }),
  });
}

/** The options of a listing's `first` and `after` arguments (`t.arg.int(pageArgs.first)`, `t.arg.string(pageArgs.after)`). */
export const pageArgs = {
  first: {
    defaultValue: LISTING_PAGE_SIZE.default,
    description: `Rows per page, ${LISTING_PAGE_SIZE.min} to ${LISTING_PAGE_SIZE.max}.`,
    ...constraints({ minimum: LISTING_PAGE_SIZE.min, maximum: LISTING_PAGE_SIZE.max }),
  },
  after: { description: 'nextCursor of the previous page.' },
} as const;
