"""Lesson 9, tensor and pipeline parallelism: one module per figure, with the lesson's
shared, Qt-free physics beside them (`schedules`: the pipeline schedules as tasks;
`megatron`: 9.1, the Megatron MLP split; `pipeline`: 9.2, the schedules timed, their
bubble and stash; `tp_comm`: 9.3, all-reduces against matmuls;
`layout`: 9.4, a TP × PP × DP plan and its memory)."""
