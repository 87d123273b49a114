import { Kind, type DocumentNode, type FieldNode, type FragmentDefinitionNode, type SelectionSetNode } from 'graphql';

export type FragmentLookup = (name: string) => FragmentDefinitionNode | undefined;

/** A document's fragments by name. */
export function fragmentsOf(document: DocumentNode): FragmentLookup {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions)
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  return (name) => fragments.get(name);
}

/**
 * The fields one selection set selects, through its inline fragments and fragment spreads (each
 * fragment once, as execution merges repeated spreads), without descending into the fields' own
 * selections. Documents reach here validated, so fragments are acyclic.
 */
export function* fieldsOf(selectionSet: SelectionSetNode, fragment: FragmentLookup, seen = new Set<string>()): Generator<FieldNode> {
  for (const selection of selectionSet.selections) {
    if (selection.kind === Kind.FIELD) {
      yield selection;
    } else if (selection.kind === Kind.INLINE_FRAGMENT) {
      yield* fieldsOf(selection.selectionSet, fragment, seen);
    } else if (!seen.has(selection.name.value)) {
      seen.add(selection.name.value);
      const definition = fragment(selection.name.value);
      if (definition) yield* fieldsOf(definition.selectionSet, fragment, seen);
    }
  }
}
