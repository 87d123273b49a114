import { builder } from '../schema/builder.js';
import { constraints } from '../schema/constraints.js';
import { OPTIONAL_TEXT } from '../skip-trace/input-rules.js';
import { ActorTypeEnum, constraintsOf, PhoneTypeEnum, SkipTraceAddressInput } from '../skip-trace/inputs.schema.js';
import { importPropertyRecords } from './property-records.import.js';
import { AGE_MAX, CONTACTS_MAX, EMAIL_MAX_LENGTH, IMPORT_MAX, OWNERS_MAX, PERSONS_MAX } from './property-records.validation.js';

/** JSON Schema keywords for discovery; the import's validation enforces the same limits itself. */
const nameConstraints = constraintsOf(OPTIONAL_TEXT);

const PhoneInput = builder.inputType('PhoneInput', {
  fields: (t) => ({
    number: t.string({ required: true, description: 'Any format; stored as digits, a leading US country code 1 dropped.' }),
    type: t.field({ type: PhoneTypeEnum, defaultValue: 'unknown' }),
  }),
});

/** Shared by a person owner and an entity owner's persons. */
type Types = typeof builder extends PothosSchemaTypes.SchemaBuilder<infer T> ? T : never;
const personFields = (t: PothosSchemaTypes.InputFieldBuilder<Types, 'InputObject'>) => ({
  firstName: t.string(nameConstraints),
  lastName: t.string(nameConstraints),
  middleName: t.string(nameConstraints),
  age: t.int({ description: 'Approximate age.', ...constraints({ minimum: 0, maximum: AGE_MAX }) }),
  phones: t.field({ type: [PhoneInput], ...constraints({ maxItems: CONTACTS_MAX }) }),
  emails: t.stringList({ ...constraints({ maxItems: CONTACTS_MAX, items: { maxLength: EMAIL_MAX_LENGTH } }) }),
});

const PropertyPersonInput = builder.inputType('PropertyPersonInput', {
  description: 'A person behind an entity owner.',
  fields: (t) => personFields(t),
});

const PropertyOwnerInput = builder.inputType('PropertyOwnerInput', {
  description: 'A person owner (the person fields) or an entity owner (`name` and `persons`).',
  fields: (t) => ({
    type: t.field({ type: ActorTypeEnum, required: true }),
    ...personFields(t),
    name: t.string({ description: 'Entity only, required there.', ...nameConstraints }),
    persons: t.field({ type: [PropertyPersonInput], description: 'Entity only.', ...constraints({ maxItems: PERSONS_MAX }) }),
  }),
});

const PropertyRecordInput = builder.inputType('PropertyRecordInput', {
  fields: (t) => ({
    address: t.field({ type: SkipTraceAddressInput, required: true }),
    owners: t.field({ type: [PropertyOwnerInput], required: true, ...constraints({ maxItems: OWNERS_MAX }) }),
  }),
});

const ImportPropertyRecordsResult = builder.objectRef<{ imported: number }>('ImportPropertyRecordsResult').implement({
  fields: (t) => ({ imported: t.exposeInt('imported', { description: 'Records imported.' }) }),
});

builder.mutationFields((t) => ({
  importPropertyRecords: t.field({
    type: ImportPropertyRecordsResult,
    description: 'Stores property records for the records skip-trace provider. Re-importing an address replaces its owners.',
    authScopes: { platform: true },
    args: { input: t.arg({ type: [PropertyRecordInput], required: true, ...constraints({ maxItems: IMPORT_MAX }) }) },
    resolve: (_root, args, ctx) => importPropertyRecords(ctx.db.em, args.input),
  }),
}));
