"""Shape ops: reshape, transpose, concatenate/stack/split, constructors, pad, diff, flip, roll, sort, tile."""
