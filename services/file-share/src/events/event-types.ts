// The events of GET /events and their data members (paths are share paths, never server paths):
//   checksum-update  {filePath, checksum, size, mtime}   a file's bytes were stored and hashed (upload, replace)
//   file-deleted     {filePath, isDirectory}             a file, or a folder with everything in it, was deleted
//   folder-created   {folderPath}                        a folder was created (explicitly or as an upload's parent)
//   file-renamed     {oldPath, newPath, isDirectory}     a file or folder was renamed within its folder
//   resync           {reason}                            sent instead of a replay that is no longer complete
export const EVENT_NAMES = ['checksum-update', 'file-deleted', 'folder-created', 'file-renamed'] as const;
export type EventName = (typeof EVENT_NAMES)[number];

export interface ShareEvent {
  id: number;
  name: EventName;
  /** The share paths the event is about: the permission filter compares these with the reader's scope. */
  paths: string[];
  data: Record<string, unknown>;
}
