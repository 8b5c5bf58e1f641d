"""A durable store: every change is saved in SQLite (standard library, WAL mode) so a restarted kubesim goes
on where it stopped, with the same objects, UIDs and resourceVersions, and enough watch history for clients
to resume their watches.

    journal = SqliteJournal.open(data_dir)   # creates DIR/kubesim.db; DataDirError if it is not kubesim's
    journal.load(store)                      # objects, revision counter and watch history, before any write
    journal.attach(store)                    # from now on every change event is saved
    journal.close()                          # saves what is pending and marks the store cleanly closed

Writes are grouped: the events of one event-loop turn are saved in one transaction scheduled with
`loop.call_soon`, so persistence costs one commit per turn rather than one per write. A kill -9 loses at most
the group not yet committed; SQLite's journal keeps the file consistent. Revisions cannot go backwards after a
crash: a revision is only handed out below a saved ceiling (raised, in its own commit, `RESERVE` at a time),
and a store that was not closed cleanly continues from that ceiling.
"""

from __future__ import annotations

import asyncio
import fcntl
import logging
import sqlite3
from pathlib import Path
from typing import IO

from kubesim.storage.history import Retained
from kubesim.storage.records import Entry, Subscription, WatchEvent
from kubesim.storage.store import Store

log = logging.getLogger(__name__)

DB_NAME = "kubesim.db"
LOCK_NAME = "kubesim.lock"  # flock'ed while a kubesim uses the directory
SCHEMA_VERSION = 1
RESERVE = 10_000  # revisions handed out per saved ceiling
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS objects (
    resource TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL, rv INTEGER NOT NULL,
    data BLOB NOT NULL, PRIMARY KEY (resource, namespace, name));
CREATE TABLE IF NOT EXISTS events (
    rv INTEGER PRIMARY KEY, resource TEXT NOT NULL, type TEXT NOT NULL, data BLOB NOT NULL,
    old_rv INTEGER NOT NULL, old_data BLOB);
CREATE INDEX IF NOT EXISTS events_by_resource ON events (resource, rv);
CREATE TABLE IF NOT EXISTS floors (resource TEXT PRIMARY KEY, floor INTEGER NOT NULL);
"""


class DataDirError(ValueError):
    """The data directory cannot hold a kubesim store (not SQLite, another format, not writable)."""


class SqliteJournal:
    def __init__(self, conn: sqlite3.Connection, path: Path, lock: IO[bytes]) -> None:
        self.path = path
        self._conn = conn
        self._lock = lock
        self._store: Store | None = None
        self._subscription: Subscription | None = None
        self._pending: list[WatchEvent] = []
        self._scheduled = False
        self._ceiling = 0
        self._floors: dict[str, int] = {}
        self.commits = 0  # transactions saved (for tests and benchmarks)

    @classmethod
    def open(cls, data_dir: str | Path) -> SqliteJournal:
        directory = Path(data_dir)
        path = directory / DB_NAME
        try:
            directory.mkdir(parents=True, exist_ok=True)
            lock = (directory / LOCK_NAME).open("wb")
        except OSError as exc:
            raise DataDirError(f"{directory}: cannot use as a kubesim data directory ({exc})") from None
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            lock.close()
            raise DataDirError(f"{directory}: in use by another kubesim") from None
        try:
            conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: a commit survives a killed process
            conn.executescript(_SCHEMA)
            version = _meta(conn, "schema")
            if version is None:
                conn.execute("INSERT INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
            elif version != SCHEMA_VERSION:
                conn.close()
                raise DataDirError(
                    f"{path}: kubesim data format {version}, this kubesim reads {SCHEMA_VERSION}"
                )
        except (OSError, sqlite3.DatabaseError, DataDirError) as exc:
            lock.close()
            if isinstance(exc, DataDirError):
                raise
            raise DataDirError(f"{path}: not a kubesim data directory ({exc})") from None
        return cls(conn, path, lock)

    # ---- start-up ------------------------------------------------------------------------------------------
    def load(self, store: Store) -> int:
        """Restore the saved cluster into an empty store; returns how many objects were restored."""
        conn = self._conn
        saved = _meta(conn, "revision") or 0
        ceiling = _meta(conn, "ceiling") or 0
        clean = bool(_meta(conn, "clean"))
        # After a crash, revisions up to the ceiling may have been handed out without being saved.
        store.restore_revision(saved if clean else max(saved, ceiling))
        store.history.restore_global_floor(_meta(conn, "global_floor") or 0)
        self._floors = dict(conn.execute("SELECT resource, floor FROM floors").fetchall())
        shared: dict[int, bytes] = {}  # one bytes object per revision, however many rows repeat it
        resources = [row[0] for row in conn.execute("SELECT DISTINCT resource FROM events")]
        for resource in sorted(set(resources) | set(self._floors)):
            rows = conn.execute(
                "SELECT rv, type, data, old_rv, old_data FROM events WHERE resource = ? ORDER BY rv",
                (resource,),
            )
            retained = []
            for rv, etype, data, old_rv, old_data in rows:
                shared[rv] = data
                old = None if old_data is None else shared.get(old_rv, old_data)
                retained.append(Retained(etype, rv, data, old_rv, old))
            store.history.restore(resource, self._floors.get(resource, 0), retained)
        count = 0
        for resource, namespace, name, rv, data in conn.execute(
            "SELECT resource, namespace, name, rv, data FROM objects"
        ):
            store.restore_entry(resource, namespace, name, Entry(None, shared.get(rv, data), rv))
            count += 1
        self._ceiling = store.resource_version
        self._save_ceiling(store.resource_version)
        return count

    def attach(self, store: Store) -> None:
        self._store = store
        store.journal = self
        self._subscription = store.subscribe(None, self._record)

    # ---- saving --------------------------------------------------------------------------------------------
    def _record(self, event: WatchEvent) -> None:
        self._pending.append(event)
        if event.rv >= self._ceiling:
            self.flush()  # the ceiling goes up, saved, before this revision is answered to anyone
            self._save_ceiling(event.rv)
            return
        if not self._scheduled:
            self._scheduled = True
            try:
                asyncio.get_running_loop().call_soon(self.flush)
            except RuntimeError:  # no loop (a synchronous caller): save right away
                self.flush()

    def _save_ceiling(self, rv: int) -> None:
        self._ceiling = rv + RESERVE
        with self._conn:
            self._conn.execute("BEGIN")
            _set_meta(self._conn, "ceiling", self._ceiling)
            _set_meta(self._conn, "clean", 0)

    def flush(self) -> None:
        """Save every pending change in one transaction."""
        self._scheduled = False
        if not self._pending:
            return
        events, self._pending = self._pending, []
        upserts: list[tuple[str, str, str, int, bytes]] = []
        deletes: list[tuple[str, str, str]] = []
        rows: list[tuple[int, str, str, bytes, int, bytes | None]] = []
        touched: set[str] = set()
        for event in events:
            entry, old, resource = event.entry, event.old, event.resource
            key = (resource, entry.namespace, entry.name)
            if event.type == "DELETED":
                deletes.append(key)
            else:
                upserts.append((*key, entry.rv, entry.data))
            if old is None:
                rows.append((entry.rv, resource, event.type, entry.data, 0, None))
            else:
                rows.append((entry.rv, resource, event.type, entry.data, old.rv, old.data))
            touched.add(resource)
        try:
            self._save(events, upserts, deletes, rows, touched)
        except sqlite3.Error:  # a full disk, a removed directory: say so, keep serving from memory
            log.exception("kubesim could not save %d changes to %s", len(events), self.path)
            return
        self.commits += 1

    def _save(
        self,
        events: list[WatchEvent],
        upserts: list[tuple[str, str, str, int, bytes]],
        deletes: list[tuple[str, str, str]],
        rows: list[tuple[int, str, str, bytes, int, bytes | None]],
        touched: set[str],
    ) -> None:
        conn = self._conn
        with conn:
            conn.execute("BEGIN")
            # Deletes and upserts of one group may touch the same key: replay them in order when they do.
            if deletes and upserts and set(deletes) & {u[:3] for u in upserts}:
                self._replay_in_order(events)
            else:
                conn.executemany("DELETE FROM objects WHERE resource=? AND namespace=? AND name=?", deletes)
                conn.executemany("INSERT OR REPLACE INTO objects VALUES (?, ?, ?, ?, ?)", upserts)
            conn.executemany("INSERT OR REPLACE INTO events VALUES (?, ?, ?, ?, ?, ?)", rows)
            self._trim(touched)
            _set_meta(conn, "revision", events[-1].rv)

    def _replay_in_order(self, events: list[WatchEvent]) -> None:
        for event in events:
            entry = event.entry
            key = (event.resource, entry.namespace, entry.name)
            if event.type == "DELETED":
                self._conn.execute("DELETE FROM objects WHERE resource=? AND namespace=? AND name=?", key)
            else:
                self._conn.execute(
                    "INSERT OR REPLACE INTO objects VALUES (?, ?, ?, ?, ?)", (*key, entry.rv, entry.data)
                )

    def _trim(self, resources: set[str]) -> None:
        """Forget the saved events the in-memory history forgot (it keeps a fixed number per resource)."""
        assert self._store is not None
        for resource in resources:
            floor = self._store.history.floor(resource)
            if floor > self._floors.get(resource, 0):
                self._floors[resource] = floor
                self._conn.execute("DELETE FROM events WHERE resource = ? AND rv <= ?", (resource, floor))
                self._conn.execute("INSERT OR REPLACE INTO floors VALUES (?, ?)", (resource, floor))

    # ---- what the store tells us beyond events -------------------------------------------------------------
    def dropped(self, resource: str) -> None:
        self.flush()
        with self._conn:
            self._conn.execute("BEGIN")
            self._conn.execute("DELETE FROM objects WHERE resource = ?", (resource,))

    def compacted(self, rv: int) -> None:
        self.flush()
        with self._conn:
            self._conn.execute("BEGIN")
            self._conn.execute("DELETE FROM events")
            _set_meta(self._conn, "global_floor", rv)

    def close(self) -> None:
        """Save what is pending, mark the store cleanly closed and close the file."""
        if self._subscription is not None:
            self._subscription.close()
            self._subscription = None
        if self._store is not None:
            self._store.journal = None
        self.flush()
        if self._store is not None:
            with self._conn:
                self._conn.execute("BEGIN")
                _set_meta(self._conn, "revision", self._store.resource_version)
                _set_meta(self._conn, "clean", 1)
        self._conn.close()
        self._lock.close()  # releases the flock


def _meta(conn: sqlite3.Connection, key: str) -> int | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else int(row[0])


def _set_meta(conn: sqlite3.Connection, key: str, value: int) -> None:
    conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))
