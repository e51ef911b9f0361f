<?php

declare(strict_types=1);

namespace Sitetools\Typo3Reindex\Client;

/**
 * What sitetools answered to a request of its admin API: the job (id, state, coalesced)
 * when it accepted it, or why not.
 */
final class ReindexResponse
{
    /**
     * @param int $status the HTTP status; 0 when no answer came (sitetools unreachable, timeout, not configured)
     * @param array<string, mixed> $job the answer's body when it is a job
     */
    public function __construct(
        public readonly int $status,
        public readonly array $job = [],
        public readonly string $error = '',
    ) {
    }

    public function accepted(): bool
    {
        return $this->error === '' && ($this->status === 202 || $this->status === 200);
    }

    public function id(): string
    {
        return (string)($this->job['id'] ?? '');
    }

    public function state(): string
    {
        return (string)($this->job['state'] ?? '');
    }
}
