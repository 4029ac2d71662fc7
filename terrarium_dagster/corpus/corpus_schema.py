"""The corpus schema (the *banished.db* tables), for the importers and the test generators."""

CORPUS_SCHEMA = """
CREATE TABLE thread (id INTEGER PRIMARY KEY, title TEXT);
CREATE TABLE post (thread_id INTEGER, id INTEGER PRIMARY KEY, name TEXT, trip_code TEXT,
                   subject TEXT, time INTEGER, file_url TEXT, file_name TEXT, body TEXT);
CREATE TABLE tag (post_id INTEGER, name TEXT);
CREATE TABLE link (link_from INTEGER, link_to INTEGER);
"""
