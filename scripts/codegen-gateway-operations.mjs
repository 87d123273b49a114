/**
 * A graphql-codegen plugin: the map from each gateway operationId to the types of its variables and
 * of its `data` (the operation's root field, which is what `POST /api/v1/call` answers), written
 * after the `typescript-operations` plugin's output, whose type names it uses
 * (`<OperationName>Query` / `<OperationName>QueryVariables`, the name's first letter upper-cased), and its
 * kind (`operation`: a subscription is answered as a stream, never as one JSON body).
 */
const SUFFIX = { query: 'Query', mutation: 'Mutation', subscription: 'Subscription' };

export const plugin = (_schema, documents, config) => {
  const entries = [];
  // Only the gateway's own documents are operations; others (the skip trace route's) just get their types.
  const gatewayDocuments = documents.filter(({ location }) => location?.replaceAll('\\', '/').includes(config.operationsFolder));
  for (const { document } of gatewayDocuments) {
    for (const definition of document?.definitions ?? []) {
      if (definition.kind !== 'OperationDefinition' || !definition.name) continue;
      const name = definition.name.value;
      const root = definition.selectionSet.selections.find((selection) => selection.kind === 'Field');
      const rootKey = (root.alias ?? root.name).value;
      const typeName = `${name[0].toUpperCase()}${name.slice(1)}${SUFFIX[definition.operation]}`;
      entries.push(
        `  ${name}: { operation: '${definition.operation}'; variables: ${typeName}Variables; data: ${typeName}['${rootKey}'] };`,
      );
    }
  }
  entries.sort();
  return [
    '',
    '/** Each gateway operationId: its `variables` and the `data` that `POST /api/v1/call` answers with. */',
    'export interface GatewayOperations {',
    ...entries,
    '}',
    '',
    'export type GatewayOperationId = keyof GatewayOperations;',
    '/** The operationIds answered as Server-Sent Events (subscriptions). */',
    "export type GatewayStreamOperationId = { [Id in GatewayOperationId]: GatewayOperations[Id]['operation'] extends 'subscription' ? Id : never }[GatewayOperationId];",
    '',
  ].join('\n');
};
