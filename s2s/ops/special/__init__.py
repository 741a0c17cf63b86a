"""scipy.special: gammaln, digamma, erf, expit, logsumexp, xlogy, ..."""
