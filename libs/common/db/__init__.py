"""PostgreSQL access with psycopg 3: settings, a connection pool, versioned migrations."""
