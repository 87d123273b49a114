/** Constraints come from input-rules.ts, so the REST validator and the resolvers refuse in the same words. */
import { builder } from '../schema/builder.js';
import { constraints } from '../schema/constraints.js';
import { ACTOR_TYPES, ADDRESS_RULES, OPTIONAL_TEXT, type FieldConstraint } from './input-rules.js';
import { PHONE_TYPES } from './providers/provider.js';

export const constraintsOf = (rule: FieldConstraint) => constraints(rule.keywords, rule.messages);
const { line1, line2, city, state, zip } = ADDRESS_RULES;

export const ActorTypeEnum = builder.enumType('ActorType', {
  description: 'Whether an actor or an owner is a person or an entity (company, trust, LLC).',
  values: ACTOR_TYPES,
});

export const PhoneTypeEnum = builder.enumType('PhoneType', { values: PHONE_TYPES });

export const SkipTraceAddressInput = builder.inputType('SkipTraceAddressInput', {
  description: 'A US property address. Spellings are standardized (USPS Publication 28) before lookup.',
  fields: (t) => ({
    line1: t.string({ required: line1.required, description: 'Street address.', ...constraintsOf(line1) }),
    line2: t.string({ required: line2.required, description: 'Apartment, unit, suite.', ...constraintsOf(line2) }),
    city: t.string({ required: city.required, ...constraintsOf(city) }),
    state: t.string({ required: state.required, description: 'Two-letter USPS code, any case.', ...constraintsOf(state) }),
    zip: t.string({
      required: zip.required,
      description: 'Five or nine digits: 78701, 78701-1234 or 787011234.',
      ...constraintsOf(zip),
    }),
  }),
});

export const SkipTraceActorInput = builder.inputType('SkipTraceActorInput', {
  description:
    'Narrows the trace to one person (firstName, lastName) or entity (name). It always narrows: an entity needs a name, a person a firstName or lastName, holding a letter or digit (BAD_USER_INPUT otherwise).',
  fields: (t) => ({
    type: t.field({ type: ActorTypeEnum, required: true }),
    firstName: t.string({ description: 'Person only.', ...constraintsOf(OPTIONAL_TEXT) }),
    lastName: t.string({ description: 'Person only.', ...constraintsOf(OPTIONAL_TEXT) }),
    name: t.string({ description: 'Entity or company name; entity only.', ...constraintsOf(OPTIONAL_TEXT) }),
  }),
});

export const SkipTraceInput = builder.inputType('SkipTraceInput', {
  fields: (t) => ({
    address: t.field({ type: SkipTraceAddressInput, required: true }),
    actor: t.field({ type: SkipTraceActorInput }),
  }),
});
