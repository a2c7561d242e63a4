"""Lesson 9, tensor and pipeline parallelism: one module per figure, with the lesson's
shared, Qt-free physics beside them (`schedules`: the pipeline schedules as tasks)."""
