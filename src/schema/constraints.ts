/**
 * JSON Schema keywords for an argument or input field, stated once in `extensions.constraints` for
 * resolvers, discovery and REST validation. `messages` words a rule whose generic wording reads badly
 * (REST's own validator only; published schemas stay standard).
 */
export type ConstraintMessages = { [keyword: string]: string | ConstraintMessages };

export const constraints = (keywords: Record<string, unknown>, messages?: ConstraintMessages) => ({
  extensions: messages ? { constraints: keywords, constraintMessages: messages } : { constraints: keywords },
});
