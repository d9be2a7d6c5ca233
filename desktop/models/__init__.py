"""Qt item models over the service's data: rows, columns and roles, tested without windows. No widgets here."""
