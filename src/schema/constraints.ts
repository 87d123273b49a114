/**
 * JSON Schema keywords for an argument or input field, kept in its `extensions.constraints`. The
 * resolvers enforce the same limits; discovery documents and the REST routes' validation read
 * them from the schema, so the limits are stated once.
 *
 * `messages` words a keyword whose generic wording would read badly (a ZIP `pattern`, a state
 * code's length), keyed like the keywords (`items` for list items): the rule's own message, the
 * one its resolver gives, kept in `extensions.constraintMessages`. Only the REST routes' own
 * validator reads them; the published schemas stay standard JSON Schema.
 */
export type ConstraintMessages = { [keyword: string]: string | ConstraintMessages };

export const constraints = (keywords: Record<string, unknown>, messages?: ConstraintMessages) => ({
  extensions: messages ? { constraints: keywords, constraintMessages: messages } : { constraints: keywords },
});
