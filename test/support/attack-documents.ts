/**
 * GraphQL documents an attacker with an ordinary key would send: each is small and passes the
 * depth, alias, cost and token limits, yet was once enough to exhaust the service's heap.
 */

/** A type reference walked three `ofType` levels down, with `fragment` at each level. */
const typeRef = (fragment: string) => `{ ...${fragment} ofType { ...${fragment} ofType { ...${fragment} ofType { ...${fragment} } } } }`;

/** Fragments that fan out: each level of the introspection lists repeats the next fragment several times. */
const fanOutFragments = [
  `fragment Leaf on __Type { name kind description specifiedByURL enumValues(includeDeprecated: true) { name description isDeprecated deprecationReason } ofType { name kind ofType { name kind ofType { name kind } } } }`,
  `fragment Middle on __Type { ...Leaf fields(includeDeprecated: true) { name description isDeprecated deprecationReason args(includeDeprecated: true) { name description defaultValue type ${typeRef('Leaf')} } type ${typeRef('Leaf')} } }`,
  `fragment Top on __Type { ...Leaf fields(includeDeprecated: true) { name description args(includeDeprecated: true) { name defaultValue description type ${typeRef('Middle')} } type ${typeRef('Middle')} } }`,
].join('\n');

/** `aliases` aliased `__schema { types { … } }` selections over fan-out fragments (~1 KB of text). */
export function aliasedIntrospection(aliases: number): string {
  return `{ ${Array.from({ length: aliases }, (_, i) => `s${i}: __schema { types { ...Top } }`).join(' ')} }\n${fanOutFragments}`;
}

/** One `__type` walk with the same fan-out, for the per-type variant of the attack. */
export function aliasedTypeIntrospection(aliases: number, typeName = 'Query'): string {
  return `{ ${Array.from({ length: aliases }, (_, i) => `t${i}: __type(name: "${typeName}") { ...Top }`).join(' ')} }\n${fanOutFragments}`;
}

/**
 * The `n`th of many distinct documents, each legal on its own: `aliases` aliased feed pages of 50
 * (15 is the alias limit), with names unique to `n`, so no two share a cache entry.
 */
export function distinctFeedDocument(n: number, aliases = 15): string {
  const fields = 'id notificationType isSeen title body createdAt seenAt contactId dealId';
  return `query Feed${n} { ${Array.from({ length: aliases }, (_, a) => `page${a}_${n}: notifications(limit: 50) { total hasUnread nextCursor notifications { ${fields} } }`).join(' ')} }`;
}
