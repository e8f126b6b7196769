"""The NIKA benchmark's vocabulary: its fault labels, their categories and v2 ids (`labels`).

Data with a small reader, shared by ASTRA, SADE, the marts and the lab; nothing here imports the lab.
"""
