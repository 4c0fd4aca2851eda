"""Active measurement with STAMP (RFC 8762, unauthenticated mode; TWAMP-light compatible).

``sliceportal probe reflect`` answers test packets; ``sliceportal probe send`` sends one probe
flow per slice lane, marked with the lane's DSCP (and, optionally, a source port) so the
data plane classifies it into that lane, and turns the replies into KPI samples per lane and
interval (``source='probe'``), printed or posted to ``POST /api/v1/kpis/ingest``.
A client of the portal beside ``traffic``: it knows the ingest API only as JSON over HTTP.
"""
