import { ApiKey } from '../../auth/api-key.entity.js';
import { Notification, NotificationCounter, NotificationType } from '../../notifications/notification.entity.js';
import { Organization } from '../../organizations/organization.entity.js';
import { User } from '../../organizations/user.entity.js';
import { SkipTraceKey } from '../../auth/skip-trace-keys/skip-trace-key.entity.js';

/** Listed explicitly: no folder scanning at start-up. */
export const entities = [Organization, User, ApiKey, NotificationType, Notification, NotificationCounter, SkipTraceKey];
