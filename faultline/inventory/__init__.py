"""The network inventory: nornir-style SimpleInventory folders, validated and stored (docs/inventory.md).

`load.load_inventory` reads a folder into typed hosts and links (pure); `store.read_inventory` and
`store.read_links` read what `faultline.ingest.inventory.ingest_inventory` stored in the warehouse.
"""
