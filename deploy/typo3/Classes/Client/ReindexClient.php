<?php

declare(strict_types=1);

namespace Sitetools\Typo3Reindex\Client;

use Psr\Log\LoggerInterface;
use Sitetools\Typo3Reindex\Configuration\ReindexConfiguration;
use TYPO3\CMS\Core\Http\RequestFactory;

/**
 * The publish hook of sitetools' admin API:
 *
 *   POST /admin/reindex       {"urls": [...]} (at most 1000) or {"all": true}, answered 202
 *                             with {"id", "state", "coalesced"}
 *   GET  /admin/reindex/{id}  the job's state: queued, running, done or failed
 *
 * Every call has a short deadline, and no failure is thrown: it is logged and returned,
 * so that an editor's save never fails because sitetools is away. What is missed then is
 * caught by sitetools' next sync.
 */
final class ReindexClient
{
    /** The most URLs one request may name; more become one request for the whole site. */
    public const MAX_URLS = 1000;

    public function __construct(
        private readonly RequestFactory $requestFactory,
        private readonly ReindexConfiguration $configuration,
        private readonly LoggerInterface $logger,
    ) {
    }

    /**
     * reindexUrls asks sitetools to re-crawl these pages now.
     *
     * @param list<string> $urls absolute URLs on the site's origin, or paths
     */
    public function reindexUrls(array $urls, ?string $idempotencyKey = null): ReindexResponse
    {
        $urls = array_values(array_unique($urls));
        if ($urls === []) {
            return new ReindexResponse(0, [], 'no URLs');
        }
        if (count($urls) > self::MAX_URLS) {
            // One re-crawl of the whole site costs an unchanged page a conditional request.
            return $this->reindexAll($idempotencyKey);
        }
        return $this->post(['urls' => $urls], $idempotencyKey);
    }

    /** reindexAll asks sitetools to re-crawl the whole site (its sitemap). */
    public function reindexAll(?string $idempotencyKey = null): ReindexResponse
    {
        return $this->post(['all' => true], $idempotencyKey);
    }

    /** job is the state of a job that reindexUrls or reindexAll started. */
    public function job(string $id): ReindexResponse
    {
        return $this->send('GET', '/admin/reindex/' . rawurlencode($id), null, []);
    }

    /** @param array<string, mixed> $body */
    private function post(array $body, ?string $idempotencyKey): ReindexResponse
    {
        $headers = ['Content-Type' => 'application/json'];
        if ($idempotencyKey !== null && $idempotencyKey !== '') {
            $headers['Idempotency-Key'] = $idempotencyKey;
        }
        $response = $this->send('POST', '/admin/reindex', json_encode($body, JSON_THROW_ON_ERROR | JSON_UNESCAPED_SLASHES), $headers);
        if ($response->accepted()) {
            $this->logger->info('sitetools accepted the re-crawl', [
                'job' => $response->id(),
                'state' => $response->state(),
                'coalesced' => (bool)($response->job['coalesced'] ?? false),
                'urls' => isset($body['urls']) ? count($body['urls']) : 'all',
            ]);
        } else {
            $this->logger->warning('sitetools did not take the re-crawl; its next sync will', [
                'status' => $response->status,
                'error' => $response->error,
                'urls' => isset($body['urls']) ? array_slice($body['urls'], 0, 10) : 'all',
            ]);
        }
        return $response;
    }

    /** @param array<string, string> $headers */
    private function send(string $method, string $path, ?string $body, array $headers): ReindexResponse
    {
        if (!$this->configuration->isComplete()) {
            return new ReindexResponse(0, [], 'not configured: set SITETOOLS_ADMIN_URL, and SITETOOLS_HOOK_TOKEN to sitetools\' ADMIN_HOOK_TOKEN');
        }
        $options = [
            'headers' => $headers + [
                'Authorization' => 'Bearer ' . $this->configuration->hookToken,
                'Accept' => 'application/json',
            ],
            'timeout' => $this->configuration->timeout,
            'connect_timeout' => min($this->configuration->timeout, 2.0),
            'http_errors' => false,
            'allow_redirects' => false,
        ];
        if ($body !== null) {
            $options['body'] = $body;
        }
        try {
            $response = $this->requestFactory->request($this->configuration->adminUrl . $path, $method, $options);
        } catch (\Throwable $e) {
            return new ReindexResponse(0, [], $e->getMessage());
        }
        $status = $response->getStatusCode();
        $text = (string)$response->getBody();
        $data = json_decode($text, true);
        if ($status >= 300) {
            // sitetools' errors: {"error": {"code": "invalid_arguments", "message": "..."}}
            $error = is_array($data) && is_array($data['error'] ?? null)
                ? trim(($data['error']['code'] ?? '') . ': ' . ($data['error']['message'] ?? ''), ': ')
                : mb_substr($text, 0, 200);
            return new ReindexResponse($status, [], $error !== '' ? $error : 'HTTP ' . $status);
        }
        return new ReindexResponse($status, is_array($data) ? $data : []);
    }
}
