-- Session recordings (asciicast v2). The events live in the object store as chunks (recordings/<id>/<seq>.jsonl,
-- each a run of event lines); a chunk's row commits only after its object is stored, so the index names only
-- complete objects. The header is assembled from the recording's row. Recordings outlive their session rows
-- (sessions.retention_hours), so the owner is copied here rather than referenced.
create table terminal_recordings (
  -- The session's id: one recording per session.
  id uuid primary key,
  owner_id uuid not null,
  owner_username text not null,
  started_at timestamptz not null,
  cols integer not null check (cols between 1 and 1000),
  rows integer not null check (rows between 1 and 1000),
  shell text,
  input boolean not null,
  -- recording: being written (see lease_until); complete: the session ended and the last chunk is stored;
  -- truncated: the size cap stopped it; failed: the store refused a chunk.
  state text not null default 'recording' check (state in ('recording', 'complete', 'truncated', 'failed')),
  -- Seconds from started_at to the last event stored.
  duration double precision not null default 0,
  bytes bigint not null default 0,
  chunks integer not null default 0,
  -- Bytes of the session's output recorded so far: where a gateway taking the recording over resumes.
  output_offset bigint not null default 0,
  -- The gateway process writing it, and until when its claim holds (renewed with every chunk).
  writer text,
  lease_until timestamptz,
  expires_at timestamptz not null,
  updated_at timestamptz not null default now()
);
create index terminal_recordings_owner on terminal_recordings (owner_id, started_at desc);
create index terminal_recordings_started on terminal_recordings (started_at desc);
create index terminal_recordings_expires on terminal_recordings (expires_at);

create table terminal_recording_chunks (
  recording_id uuid not null references terminal_recordings (id) on delete cascade,
  seq integer not null check (seq >= 0),
  -- Times (seconds since the recording's start) of the chunk's first and last event.
  first_at double precision not null,
  last_at double precision not null,
  bytes integer not null,
  storage_key text not null,
  -- The output's words (escape sequences removed), for search.
  words tsvector not null,
  primary key (recording_id, seq)
);
create index terminal_recording_chunks_words on terminal_recording_chunks using gin (words);
