/**
 * The variables check of a route whose body is a list of traces (the batch's, a job's): the one
 * mechanism for item rules in the REST layer. The list's shape (not an object, no items, too
 * many, an item not an object, an unknown field, a bad or repeated key) is one 422 naming every
 * path; then the operation's JSON Schema, except the rules of an item's own address and actor
 * (a length, a pattern, …), which are that item's failure and never fail the list.
 */
import type { ErrorDetail } from '../../common/errors.js';
import { listShapeProblems, type ListShape } from '../../skip-trace/items/item-rules.js';
import type { VariablesValidator } from './operation.js';

/** A list route's shape, and a variable that, when given, carries the list in another form (a job's CSV, read by its operation). */
export interface ListBody extends ListShape {
  unless?: string;
}

/** Paths (JSON pointers into the variables) whose own rules belong to the item. */
const ITEM_OWN_RULES = /^\/items\/\d+\/(address|actor)(\/|$)/;

/** A variables path (`variables.items.3.key`) as the body names it: `items[3].key`. */
const bodyPath = (path: string) => path.replace(/^variables\.?/, '').replace(/\.(\d+)(?=\.|$)/g, '[$1]') || '(body)';

/** The list body's problems, with paths as the body names them (`items[3].key`); empty when it may run. */
export function listVariablesProblems(validator: VariablesValidator, variables: unknown, list: ListBody): ErrorDetail[] {
  const other = list.unless !== undefined && (variables as Record<string, unknown> | null)?.[list.unless] !== undefined;
  if (!other) {
    const shape = listShapeProblems(variables, list);
    if (shape.length) return shape;
  }
  return validator.check(variables, ITEM_OWN_RULES).map((detail) => ({ ...detail, path: bodyPath(detail.path) }));
}
