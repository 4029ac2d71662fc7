"""The curator: reviews tentative entries at thread boundaries (see `curation.curator`)."""
