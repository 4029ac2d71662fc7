"""The corpus schema (the *banished.db* tables), for the importers and the test generators."""

CORPUS_SCHEMA = """
CREATE TABLE thread (id INTEGER PRIMARY KEY, title TEXT);
CREATE TABLE post (thread_id INTEGER, id INTEGER PRIMARY KEY, name TEXT, trip_code TEXT,
                   subject TEXT, time INTEGER, file_url TEXT, file_name TEXT, body TEXT);
CREATE TABLE tag (post_id INTEGER, name TEXT);
CREATE TABLE link (link_from INTEGER, link_to INTEGER);
"""

# The indexes a corpus's readers look up by (a thread's posts in time order, a post's tags, the
# links from and to a post), made after the rows are in. Without them every thread's posts were a
# scan of the whole corpus: an imported Les Misérables (366 chapters, 13,639 paragraphs) took
# 24 ms a thread, most of a curation's time on a long book.
CORPUS_INDEXES = """
CREATE INDEX post_thread_time ON post (thread_id, time);
CREATE INDEX tag_post ON tag (post_id);
CREATE INDEX link_from_post ON link (link_from);
CREATE INDEX link_to_post ON link (link_to);
"""
