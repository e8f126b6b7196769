"""Which log lines belong to a ticket: devices it points at, their neighbours, a time window, clock offsets."""
