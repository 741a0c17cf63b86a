"""pmap's collectives: psum, pmean, pmax, pmin, all_gather, all_to_all, ppermute, axis_index."""
