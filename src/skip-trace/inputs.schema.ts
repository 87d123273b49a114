/**
 * The GraphQL input and enum types of a trace's address and actor, shared by the `skipTrace`
 * mutation and `importPropertyRecords`. Their constraints (the JSON Schema the REST route checks,
 * and discovery shows) and the constraints' messages come from the rules (input-rules.ts), which
 * the resolvers enforce in the same words.
 */
import { builder } from '../schema/builder.js';
import { constraints } from '../schema/constraints.js';
import { ACTOR_TYPES, FIELD_CONSTRAINTS } from './input-rules.js';
import { PHONE_TYPES } from './providers/provider.js';

const { requiredText, optionalText, state, zip } = FIELD_CONSTRAINTS;

export const ActorTypeEnum = builder.enumType('ActorType', {
  description: 'Whether an actor or an owner is a person or an entity (company, trust, LLC).',
  values: ACTOR_TYPES,
});

export const PhoneTypeEnum = builder.enumType('PhoneType', { values: PHONE_TYPES });

export const SkipTraceAddressInput = builder.inputType('SkipTraceAddressInput', {
  description: 'A US property address. Spellings are standardized (USPS Publication 28) before lookup.',
  fields: (t) => ({
    line1: t.string({ required: true, description: 'Street address.', ...constraints(requiredText.keywords, requiredText.messages) }),
    line2: t.string({ description: 'Apartment, unit, suite.', ...constraints(optionalText.keywords) }),
    city: t.string({ required: true, ...constraints(requiredText.keywords, requiredText.messages) }),
    state: t.string({ required: true, description: 'Two-letter USPS code, any case.', ...constraints(state.keywords, state.messages) }),
    zip: t.string({
      required: true,
      description: 'Five or nine digits: 78701, 78701-1234 or 787011234.',
      ...constraints(zip.keywords, zip.messages),
    }),
  }),
});

const SkipTraceActorInput = builder.inputType('SkipTraceActorInput', {
  description:
    'Narrows the trace to one person (firstName, lastName) or entity (name). It always narrows: an entity needs a name, a person a firstName or lastName, holding a letter or digit (BAD_USER_INPUT otherwise).',
  fields: (t) => ({
    type: t.field({ type: ActorTypeEnum, required: true }),
    firstName: t.string({ description: 'Person only.', ...constraints(optionalText.keywords) }),
    lastName: t.string({ description: 'Person only.', ...constraints(optionalText.keywords) }),
    name: t.string({ description: 'Entity or company name; entity only.', ...constraints(optionalText.keywords) }),
  }),
});

export const SkipTraceInput = builder.inputType('SkipTraceInput', {
  fields: (t) => ({
    address: t.field({ type: SkipTraceAddressInput, required: true }),
    actor: t.field({ type: SkipTraceActorInput }),
  }),
});
