/** The driver may give a timestamp column as a Date or as an ISO string. */
export const toDate = (value: Date | string): Date => (value instanceof Date ? value : new Date(value));
