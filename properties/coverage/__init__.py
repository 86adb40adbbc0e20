"""What the kit covers: the catalogue of P01–P18, which checks may name each requirement id (read
from the checks' source), and the ids checked elsewhere or not at all."""
