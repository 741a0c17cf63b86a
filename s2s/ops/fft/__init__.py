"""np.fft, and the ops that take complex values apart (real, imag, conj, angle)."""
