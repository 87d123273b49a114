/* eslint-disable */
import * as types from './graphql.js';



/**
 * Map of all GraphQL operations in the project.
 *
 * This map has several performance disadvantages:
 * 1. It is not tree-shakeable, so it will include all operations in the project.
 * 2. It is not minifiable, so the string of a GraphQL query will be multiple times inside the bundle.
 * 3. It does not support dead code elimination, so it will add unused operations.
 *
 * Therefore it is highly recommended to use the babel or swc plugin for production.
 * Learn more about it here: https://the-guild.dev/graphql/codegen/plugins/presets/preset-client#reducing-bundle-size
 */
type Documents = {
    "query getAvailableNotificationTypes {\n  availableNotificationTypes {\n    types {\n      notificationType\n      label\n      category\n    }\n  }\n}": typeof types.GetAvailableNotificationTypesDocument,
    "query getNotificationCounts($notificationTypeFilter: String) {\n  notificationCounts(notificationTypeFilter: $notificationTypeFilter) {\n    unreadCount\n    readCount\n  }\n}": typeof types.GetNotificationCountsDocument,
    "query listNotifications($notificationTypeFilter: String, $seen: Boolean, $searchTerm: String, $limit: Int, $cursor: String) {\n  notifications(\n    notificationTypeFilter: $notificationTypeFilter\n    seen: $seen\n    searchTerm: $searchTerm\n    limit: $limit\n    cursor: $cursor\n  ) {\n    notifications {\n      id\n      notificationType\n      isSeen\n      title\n      body\n      createdAt\n      seenAt\n      contactId\n      dealId\n      noteId\n      replyId\n      taskId\n      callId\n      actionType\n      actionTargetId\n    }\n    total\n    hasUnread\n    nextCursor\n  }\n}": typeof types.ListNotificationsDocument,
    "mutation markNotificationsRead($notificationIds: [ID!]!, $isSeen: Boolean!) {\n  markNotificationsRead(notificationIds: $notificationIds, isSeen: $isSeen) {\n    success\n    updatedCount\n  }\n}": typeof types.MarkNotificationsReadDocument,
};
const documents: Documents = {
    "query getAvailableNotificationTypes {\n  availableNotificationTypes {\n    types {\n      notificationType\n      label\n      category\n    }\n  }\n}": types.GetAvailableNotificationTypesDocument,
    "query getNotificationCounts($notificationTypeFilter: String) {\n  notificationCounts(notificationTypeFilter: $notificationTypeFilter) {\n    unreadCount\n    readCount\n  }\n}": types.GetNotificationCountsDocument,
    "query listNotifications($notificationTypeFilter: String, $seen: Boolean, $searchTerm: String, $limit: Int, $cursor: String) {\n  notifications(\n    notificationTypeFilter: $notificationTypeFilter\n    seen: $seen\n    searchTerm: $searchTerm\n    limit: $limit\n    cursor: $cursor\n  ) {\n    notifications {\n      id\n      notificationType\n      isSeen\n      title\n      body\n      createdAt\n      seenAt\n      contactId\n      dealId\n      noteId\n      replyId\n      taskId\n      callId\n      actionType\n      actionTargetId\n    }\n    total\n    hasUnread\n    nextCursor\n  }\n}": types.ListNotificationsDocument,
    "mutation markNotificationsRead($notificationIds: [ID!]!, $isSeen: Boolean!) {\n  markNotificationsRead(notificationIds: $notificationIds, isSeen: $isSeen) {\n    success\n    updatedCount\n  }\n}": types.MarkNotificationsReadDocument,
};

/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "query getAvailableNotificationTypes {\n  availableNotificationTypes {\n    types {\n      notificationType\n      label\n      category\n    }\n  }\n}"): typeof import('./graphql.js').GetAvailableNotificationTypesDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "query getNotificationCounts($notificationTypeFilter: String) {\n  notificationCounts(notificationTypeFilter: $notificationTypeFilter) {\n    unreadCount\n    readCount\n  }\n}"): typeof import('./graphql.js').GetNotificationCountsDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "query listNotifications($notificationTypeFilter: String, $seen: Boolean, $searchTerm: String, $limit: Int, $cursor: String) {\n  notifications(\n    notificationTypeFilter: $notificationTypeFilter\n    seen: $seen\n    searchTerm: $searchTerm\n    limit: $limit\n    cursor: $cursor\n  ) {\n    notifications {\n      id\n      notificationType\n      isSeen\n      title\n      body\n      createdAt\n      seenAt\n      contactId\n      dealId\n      noteId\n      replyId\n      taskId\n      callId\n      actionType\n      actionTargetId\n    }\n    total\n    hasUnread\n    nextCursor\n  }\n}"): typeof import('./graphql.js').ListNotificationsDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "mutation markNotificationsRead($notificationIds: [ID!]!, $isSeen: Boolean!) {\n  markNotificationsRead(notificationIds: $notificationIds, isSeen: $isSeen) {\n    success\n    updatedCount\n  }\n}"): typeof import('./graphql.js').MarkNotificationsReadDocument;


export function graphql(source: string) {
  return (documents as any)[source] ?? {};
}
