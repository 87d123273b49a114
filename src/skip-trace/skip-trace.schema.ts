import type { ArgumentRef } from '@pothos/core';
import { builder, type BuilderTypes } from '../schema/builder.js';
import { constraints } from '../schema/constraints.js';
import { CREATED_BY_DESCRIPTION, IssuedKeyRef } from '../auth/auth.schema.js';
import { issuerOf } from '../schema/principal.js';
import { OrganizationRef } from '../organizations/organizations.schema.js';
import { skipTraceAccount } from '../billing/skip-trace-account.js';
import DataLoader from 'dataloader';
import type { Em } from '../infra/database/orm.js';
import { isUuid } from '../common/uuid.js';
import {
  activeSkipTraceKeyInfos,
  generateSkipTraceKey,
  revokeSkipTraceKey,
  rotateSkipTraceKey,
  type SkipTraceKeyInfo,
} from '../auth/skip-trace-keys/skip-trace-keys.service.js';
import { TRACE_STATUSES, type TracedPerson } from './providers/provider.js';
import { runSkipTrace, traceDeps, type SkipTraceResponse } from './skip-trace.service.js';
import { PhoneTypeEnum, SkipTraceInput } from './inputs.schema.js';

const SkipTraceStatusEnum = builder.enumType('SkipTraceStatus', { values: TRACE_STATUSES });

const SkipTraceKeyRef = builder.objectRef<SkipTraceKeyInfo>('SkipTraceKey').implement({
  description: 'The active skip trace key; only its hint (first 8 and last 4 characters) is ever shown after issue.',
  fields: (t) => ({
    id: t.exposeID('id'),
    hint: t.exposeString('hint'),
    createdAt: t.field({ type: 'DateTime', resolve: (key) => key.createdAt }),
    createdBy: t.exposeString('createdBy', { nullable: true, description: CREATED_BY_DESCRIPTION }),
  }),
});

const SKIP_TRACE_KEY_BY_ORGANIZATION = Symbol('skipTraceKeyByOrganization');
const skipTraceKeyLoader = (em: Em) =>
  new DataLoader<string, SkipTraceKeyInfo | null>(async (organizationIds) => {
    const keys = await activeSkipTraceKeyInfos(em, organizationIds.filter(isUuid));
    return organizationIds.map((id) => keys.get(id) ?? null);
  });

builder.objectField(OrganizationRef, 'skipTraceKey', (t) =>
  t.field({
    type: SkipTraceKeyRef,
    nullable: true,
    resolve: (org, _args, ctx) => ctx.db.loader(SKIP_TRACE_KEY_BY_ORGANIZATION, skipTraceKeyLoader).load(org.id),
  }),
);

const SkipTracePhoneRef = builder.objectRef<TracedPerson['phones'][number]>('SkipTracePhone').implement({
  fields: (t) => ({
    number: t.exposeString('number', { description: 'Digits only.' }),
    type: t.field({ type: PhoneTypeEnum, resolve: (phone) => phone.type }),
  }),
});

export const SkipTracePersonRef = builder.objectRef<TracedPerson>('SkipTracePerson').implement({
  fields: (t) => ({
    firstName: t.exposeString('firstName', { nullable: true }),
    lastName: t.exposeString('lastName', { nullable: true }),
    middleName: t.exposeString('middleName', { nullable: true }),
    age: t.exposeInt('age', { nullable: true, description: 'Approximate age.' }),
    phones: t.field({ type: [SkipTracePhoneRef], resolve: (person) => person.phones }),
    emails: t.exposeStringList('emails'),
  }),
});

const SkipTraceResultRef = builder.objectRef<SkipTraceResponse>('SkipTraceResult').implement({
  fields: (t) => ({
    id: t.exposeID('id', { description: 'The skip trace request id (a new UUID per call).' }),
    status: t.field({ type: SkipTraceStatusEnum, resolve: (result) => result.status }),
    persons: t.field({ type: [SkipTracePersonRef], resolve: (result) => result.persons }),
    creditsRemaining: t.exposeInt('creditsRemaining', {
      description: "The organization's balance right after this call's charge (REST: the X-Credits-Remaining header).",
    }),
    cacheHit: t.exposeBoolean('cacheHit', {
      description: 'Whether the result came from the cache rather than the provider (REST: X-Cache: hit | miss).',
    }),
    replayed: t.exposeBoolean('replayed', {
      description:
        'Whether this is the stored answer of an earlier request with the same Idempotency-Key (REST only: Idempotent-Replayed: true); never charged.',
    }),
  }),
});

/** The platform, or an ADMIN key of that very organization. */
const ofOrganizationKey = (t: { arg: { id: (options: { required: true }) => ArgumentRef<BuilderTypes, string | number> } }) => ({
  args: { organizationId: t.arg.id({ required: true }) },
  authScopes: (_root: unknown, args: { organizationId: string | number }) => ({
    platform: true,
    organizationAdmin: String(args.organizationId),
  }),
});

builder.mutationFields((t) => ({
  skipTrace: t.withAuth({ skipTrace: true }).field({
    type: SkipTraceResultRef,
    description:
      'Traces the owners of a street address (optionally one person or entity). One credit per completed trace, cached results included.',
    args: { input: t.arg({ type: SkipTraceInput, required: true }) },
    resolve: (_root, args, ctx) =>
      runSkipTrace({ ...traceDeps(ctx.services, ctx.client), slotHeld: ctx.slotHeld }, ctx.principal, args.input, {
        idempotent: ctx.idempotencyKey && { idempotencyKey: ctx.idempotencyKey, requestId: ctx.requestId },
        inputMetSchema: ctx.variablesChecked,
      }),
  }),
  generateSkipTraceKey: t.field({
    type: IssuedKeyRef,
    description: "Issues the organization's skip trace key, shown once. CONFLICT when one is active.",
    ...ofOrganizationKey(t),
    resolve: (_root, args, ctx) => generateSkipTraceKey(ctx.db.em, String(args.organizationId), issuerOf(ctx.principal)),
  }),
  rotateSkipTraceKey: t.field({
    type: IssuedKeyRef,
    description: 'Replaces the active key; the old one is refused from the next request on, on every instance.',
    ...ofOrganizationKey(t),
    resolve: (_root, args, ctx) =>
      ctx.services.principals.changing(() => rotateSkipTraceKey(ctx.db.em, String(args.organizationId), issuerOf(ctx.principal))),
  }),
  revokeSkipTraceKey: t.boolean({
    description: 'Removes the active key. NOT_FOUND when none is active.',
    ...ofOrganizationKey(t),
    resolve: (_root, args, ctx) => ctx.services.principals.changing(() => revokeSkipTraceKey(ctx.db.em, String(args.organizationId))),
  }),
  addSkipTraceCredits: t.field({
    type: OrganizationRef,
    description:
      'Records a credit purchase. A reference repeated for the same organization is applied once (the repeat changes nothing); repeated with another amount it is CONFLICT. BAD_USER_INPUT when the balance would pass 2147483647.',
    authScopes: { platform: true },
    args: {
      organizationId: t.arg.id({ required: true }),
      amount: t.arg.int({ required: true, ...constraints({ minimum: 1 }) }),
      reference: t.arg.string({ required: true, ...constraints({ minLength: 1, maxLength: 200 }) }),
    },
    resolve: (_root, args, ctx) => skipTraceAccount.addCredits(ctx.db.em, String(args.organizationId), args.amount, args.reference),
  }),
  setSkipTraceEnabled: t.field({
    type: OrganizationRef,
    description: "Whether the organization's plan permits skip tracing (403 feature_unavailable when not).",
    authScopes: { platform: true },
    args: { organizationId: t.arg.id({ required: true }), enabled: t.arg.boolean({ required: true }) },
    resolve: (_root, args, ctx) => skipTraceAccount.setEnabled(ctx.db.em, String(args.organizationId), args.enabled),
  }),
}));
