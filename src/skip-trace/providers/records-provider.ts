import type { Db } from '../../infra/database/sql.js';
import { addressKey, type NormalizedActor } from '../../address/index.js';
import { findPropertyPersons, type StoredOwnerPerson } from '../../property-records/property-records.data.js';
import { UnresolvableAddressError, type SkipTraceProvider } from './provider.js';

function matches({ ownerType, nameKey, person }: StoredOwnerPerson, actor: NormalizedActor | null): boolean {
  if (actor === null) return true;
  if (actor.type === 'entity') return ownerType === 'entity' && nameKey === actor.name;
  // Only the name parts the actor gives are compared: `{lastName: "Smith"}` matches any Smith.
  return (
    ownerType === 'person' &&
    (actor.firstName === null || person.firstKey === actor.firstName) &&
    (actor.lastName === null || person.lastKey === actor.lastName)
  );
}

/** Reads outside any request's unit of work. */
export function createRecordsProvider(db: Db): SkipTraceProvider {
  return {
    name: 'records',
    async trace({ address, actor }) {
      const stored = await findPropertyPersons(db, addressKey(address));
      if (stored === null) throw new UnresolvableAddressError();
      const persons = stored
        .filter((owner) => matches(owner, actor))
        .map(({ person: { firstName, lastName, middleName, age, phones, emails } }) => ({
          firstName,
          lastName,
          middleName,
          age,
          phones,
          emails,
        }));
      return { status: persons.length > 0 ? 'records_found' : 'no_records_found', persons };
    },
  };
}
