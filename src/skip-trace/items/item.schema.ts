/** Shared by the batch and the jobs, so both read alike. */
import { builder } from '../../schema/builder.js';
import { constraints } from '../../schema/constraints.js';
import type { ErrorDetail } from '../../common/errors.js';
import { SkipTraceActorInput, SkipTraceAddressInput } from '../inputs.schema.js';
import { SkipTracePersonRef } from '../skip-trace.schema.js';
import { ITEM_ERROR_CODES, ITEM_STATUSES, type ItemError, type ItemResult } from './item-result.js';
import { ITEM_KEY_RULE } from './item-rules.js';

export const SkipTraceItemInput = builder.inputType('SkipTraceItemInput', {
  description:
    "One row of a list: a single trace's address and optional actor, and the caller's own key for the row. An item breaking a rule of its own trace fails alone (its result says why); the others run.",
  fields: (t) => ({
    key: t.string({
      description: "The caller's id of the row, unique within the list: 1 to 64 characters of A-Z a-z 0-9 . _ : -",
      ...constraints(ITEM_KEY_RULE.keywords, {
        pattern: ITEM_KEY_RULE.message,
        minLength: ITEM_KEY_RULE.message,
        maxLength: ITEM_KEY_RULE.message,
      }),
    }),
    address: t.field({ type: SkipTraceAddressInput, required: true }),
    actor: t.field({ type: SkipTraceActorInput }),
  }),
});

const ItemStatusEnum = builder.enumType('SkipTraceItemStatus', {
  description: 'records_found and no_records_found are charged one credit; failed, pending and cancelled are not.',
  values: ITEM_STATUSES,
});

const ItemErrorCodeEnum = builder.enumType('SkipTraceItemErrorCode', { values: ITEM_ERROR_CODES });

const ErrorDetailRef = builder.objectRef<ErrorDetail>('SkipTraceErrorDetail').implement({
  fields: (t) => ({
    path: t.exposeString('path', { description: 'Relative to the item, e.g. address.zip.' }),
    message: t.exposeString('message'),
  }),
});

const ItemErrorRef = builder.objectRef<ItemError>('SkipTraceItemError').implement({
  fields: (t) => ({
    code: t.field({ type: ItemErrorCodeEnum, resolve: (error) => error.code }),
    message: t.exposeString('message'),
    details: t.field({ type: [ErrorDetailRef], nullable: true, resolve: (error) => error.details ?? null }),
  }),
});

export const SkipTraceItemResultRef = builder.objectRef<ItemResult>('SkipTraceItemResult').implement({
  description: "One item's result, at its index in the list.",
  fields: (t) => ({
    index: t.exposeInt('index', { description: 'Its position in the list, from 0.' }),
    key: t.exposeString('key', { nullable: true, description: 'The key it was sent with.' }),
    status: t.field({ type: ItemStatusEnum, resolve: (item) => item.status }),
    id: t.exposeID('id', {
      nullable: true,
      description: 'The id of its trace request (its usage row, and its charge when charged); null until it ran.',
    }),
    persons: t.field({ type: [SkipTracePersonRef], description: 'Empty unless records were found.', resolve: (item) => item.persons }),
    error: t.field({ type: ItemErrorRef, nullable: true, description: 'Why it failed; null otherwise.', resolve: (item) => item.error }),
  }),
});
