"""Prefect flows: the wiring of Faultline's stages. Importing any of them first makes Prefect's temporary API
server (used when no Prefect server is configured) end with the process that runs the flow
(`flows.ephemeral_api`)."""

from flows.ephemeral_api import guard_ephemeral_api

guard_ephemeral_api()
