// The events of GET /events and their data members (paths are share paths, never server paths):
//   checksum-update  {filePath, checksum, size, mtime}   a file's bytes were stored and hashed (upload, replace)
//   file-deleted     {filePath, isDirectory}             a file, or a folder with everything in it, was deleted
//   folder-created   {folderPath}                        a folder was created (explicitly or as an upload's parent)
//   file-renamed     {oldPath, newPath, isDirectory}     a file or folder was renamed within its folder
//   share-created    {shareId, kind, path, expiresAt}     a share link (kind share) or file request (kind request) was made
//   share-used       {shareId, kind, path, use}          a share link's counted use: a file download or a zip
//   share-revoked    {shareId, kind, path}               a link was revoked
//   request-upload   {shareId, filePath, size, checksum} a file arrived through a file request
//   resync           {reason}                            sent instead of a replay that is no longer complete
export const EVENT_NAMES = [
  'checksum-update',
  'file-deleted',
  'folder-created',
  'file-renamed',
  'share-created',
  'share-used',
  'share-revoked',
  'request-upload',
] as const;
export type EventName = (typeof EVENT_NAMES)[number];

export interface ShareEvent {
  id: number;
  name: EventName;
  /** The share paths the event is about: the permission filter compares these with the reader's scope. */
  paths: string[];
  data: Record<string, unknown>;
}
