/** A timestamp column as a Date, whether the driver gave a Date or an ISO string. */
export const toDate = (value: Date | string): Date => (value instanceof Date ? value : new Date(value));
