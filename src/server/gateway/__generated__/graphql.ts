/* eslint-disable */
/** Internal type. DO NOT USE DIRECTLY. */
type Exact<T extends { [key: string]: unknown }> = { [K in keyof T]: T[K] };
/** Internal type. DO NOT USE DIRECTLY. */
export type Incremental<T> = T | { [P in keyof T]?: P extends ' $fragmentName' | '__typename' ? T[P] : never };
import type { DocumentTypeDecoration } from '@graphql-typed-document-node/core';
export type GetAvailableNotificationTypesQueryVariables = Exact<{ [key: string]: never; }>;


export type GetAvailableNotificationTypesQuery = { availableNotificationTypes: { types: Array<{ notificationType: string, label: string, category: string }> } };

export type GetNotificationCountsQueryVariables = Exact<{
  notificationTypeFilter?: string | null | undefined;
}>;


export type GetNotificationCountsQuery = { notificationCounts: { unreadCount: number, readCount: number } };

export type ListNotificationsQueryVariables = Exact<{
  notificationTypeFilter?: string | null | undefined;
  seen?: boolean | null | undefined;
  searchTerm?: string | null | undefined;
  limit?: number | null | undefined;
  cursor?: string | null | undefined;
}>;


export type ListNotificationsQuery = { notifications: { total: number, hasUnread: boolean, nextCursor: string | null, notifications: Array<{ id: string, notificationType: string, isSeen: boolean, title: string, body: string, createdAt: unknown, seenAt: unknown, contactId: string | null, dealId: string | null, noteId: string | null, replyId: string | null, taskId: string | null, callId: string | null, actionType: string | null, actionTargetId: string | null }> } };

export type MarkNotificationsReadMutationVariables = Exact<{
  notificationIds: Array<string | number> | string | number;
  isSeen: boolean;
}>;


export type MarkNotificationsReadMutation = { markNotificationsRead: { success: boolean, updatedCount: number } };

export class TypedDocumentString<TResult, TVariables>
  extends String
  implements DocumentTypeDecoration<TResult, TVariables>
{
  __apiType?: NonNullable<DocumentTypeDecoration<TResult, TVariables>['__apiType']>;
  private value: string;
  public __meta__?: Record<string, any> | undefined;

  constructor(value: string, __meta__?: Record<string, any> | undefined) {
    super(value);
    this.value = value;
    this.__meta__ = __meta__;
  }

  override toString(): string & DocumentTypeDecoration<TResult, TVariables> {
    return this.value;
  }
}

export const GetAvailableNotificationTypesDocument = new TypedDocumentString(`
    query getAvailableNotificationTypes {
  availableNotificationTypes {
    types {
      notificationType
      label
      category
    }
  }
}
    `, {"hash":"sha256:d2cc85c90efbaf2aa92a66ef76a513a01d68b0eb6f13da873ffbb02f9a80c366"}) as unknown as TypedDocumentString<GetAvailableNotificationTypesQuery, GetAvailableNotificationTypesQueryVariables>;
export const GetNotificationCountsDocument = new TypedDocumentString(`
    query getNotificationCounts($notificationTypeFilter: String) {
  notificationCounts(notificationTypeFilter: $notificationTypeFilter) {
    unreadCount
    readCount
  }
}
    `, {"hash":"sha256:43918ac1cea113ece547f50fb730c1af0cfe28cdaf081f5793ba5835aa2597e1"}) as unknown as TypedDocumentString<GetNotificationCountsQuery, GetNotificationCountsQueryVariables>;
export const ListNotificationsDocument = new TypedDocumentString(`
    query listNotifications($notificationTypeFilter: String, $seen: Boolean, $searchTerm: String, $limit: Int, $cursor: String) {
  notifications(
    notificationTypeFilter: $notificationTypeFilter
    seen: $seen
    searchTerm: $searchTerm
    limit: $limit
    cursor: $cursor
  ) {
    notifications {
      id
      notificationType
      isSeen
      title
      body
      createdAt
      seenAt
      contactId
      dealId
      noteId
      replyId
      taskId
      callId
      actionType
      actionTargetId
    }
    total
    hasUnread
    nextCursor
  }
}
    `, {"hash":"sha256:fc817cdb185b557a98759485e01fb90c5a9899db844e9061e70d71459827000f"}) as unknown as TypedDocumentString<ListNotificationsQuery, ListNotificationsQueryVariables>;
export const MarkNotificationsReadDocument = new TypedDocumentString(`
    mutation markNotificationsRead($notificationIds: [ID!]!, $isSeen: Boolean!) {
  markNotificationsRead(notificationIds: $notificationIds, isSeen: $isSeen) {
    success
    updatedCount
  }
}
    `, {"hash":"sha256:74310b873fe8050ff9a2f0fd4986367e493293fcbd61df81707885ff8da934fd"}) as unknown as TypedDocumentString<MarkNotificationsReadMutation, MarkNotificationsReadMutationVariables>;