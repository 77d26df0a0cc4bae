mod compatibility;
mod corruption;
mod low_level;
mod recovery;
mod scratch_reuse;
mod stability;
mod stack_sizes;
