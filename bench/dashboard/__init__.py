"""The dashboard's refresh cost on large runs (`refresh`), drawn from a recorded history repeated in time
(`recorded`). May import bench.shared, engine and dashboard.
"""
