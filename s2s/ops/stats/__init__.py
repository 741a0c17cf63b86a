"""scipy.stats distributions' logpdf / pdf / cdf / ... as composites of other ops."""
