<?php

declare(strict_types=1);

namespace Sitetools\Typo3Reindex\Command;

use Sitetools\Typo3Reindex\Client\ReindexClient;
use Sitetools\Typo3Reindex\Client\ReindexResponse;
use Sitetools\Typo3Reindex\Page\PageUrls;
use Symfony\Component\Console\Command\Command;
use Symfony\Component\Console\Input\InputInterface;
use Symfony\Component\Console\Input\InputOption;
use Symfony\Component\Console\Output\OutputInterface;

/**
 * sitetools:reindex asks sitetools to re-crawl the whole site, or the pages given.
 *
 *   vendor/bin/typo3 sitetools:reindex                  the whole site (its sitemap)
 *   vendor/bin/typo3 sitetools:reindex --page 12 -p 34  these pages, in every language
 *   vendor/bin/typo3 sitetools:reindex --wait 300       and wait up to 5 minutes for the job
 *
 * In the Scheduler: the task "Execute console commands", command sitetools:reindex.
 */
final class ReindexCommand extends Command
{
    public function __construct(
        private readonly ReindexClient $client,
        private readonly PageUrls $pageUrls,
    ) {
        parent::__construct();
    }

    protected function configure(): void
    {
        $this
            ->setHelp('Without --page, sitetools re-crawls every page of its sitemap; an unchanged page costs it a conditional request and no embedding.')
            ->addOption('page', 'p', InputOption::VALUE_REQUIRED | InputOption::VALUE_IS_ARRAY, 'the uid of a page (its default language) to re-crawl in every language; repeat it for more')
            ->addOption('wait', 'w', InputOption::VALUE_REQUIRED, 'seconds to wait for the job to finish; 0 returns once sitetools has accepted it', '0')
            ->addOption('idempotency-key', null, InputOption::VALUE_REQUIRED, 'the same key with the same pages names the same job (a retried run starts none)');
    }

    protected function execute(InputInterface $input, OutputInterface $output): int
    {
        $key = $input->getOption('idempotency-key');
        $key = is_string($key) && $key !== '' ? $key : null;
        $pages = array_map('intval', (array)$input->getOption('page'));
        if ($pages === []) {
            $response = $this->client->reindexAll($key);
        } else {
            $urls = [];
            foreach ($pages as $page) {
                $found = $this->pageUrls->forPage($page);
                if ($found === []) {
                    $output->writeln(sprintf('<comment>page %d has no public URL on a site sitetools indexes: skipped</comment>', $page));
                }
                array_push($urls, ...$found);
            }
            if ($urls === []) {
                $output->writeln('<error>no page to re-crawl</error>');
                return Command::INVALID;
            }
            $output->writeln(implode("\n", array_unique($urls)), OutputInterface::VERBOSITY_VERBOSE);
            $response = $this->client->reindexUrls($urls, $key);
        }
        if (!$response->accepted()) {
            $output->writeln(sprintf('<error>sitetools did not accept the re-crawl (%s)</error>', $this->describe($response)));
            return Command::FAILURE;
        }
        $output->writeln(sprintf('sitetools job %s: %s%s', $response->id(), $response->state(), ($response->job['coalesced'] ?? false) ? ' (joined a job already under way)' : ''));

        $wait = max(0, (int)$input->getOption('wait'));
        $deadline = time() + $wait;
        $state = $response->state();
        while ($wait > 0 && !in_array($state, ['done', 'failed'], true) && time() < $deadline) {
            sleep(2);
            $job = $this->client->job($response->id());
            if (!$job->accepted()) {
                $output->writeln(sprintf('<error>the job\'s state could not be read (%s)</error>', $this->describe($job)));
                return Command::FAILURE;
            }
            if ($job->state() !== $state) {
                $state = $job->state();
                $output->writeln(sprintf('sitetools job %s: %s', $response->id(), $state));
            }
        }
        if ($state === 'failed') {
            return Command::FAILURE;
        }
        if ($wait > 0 && $state !== 'done') {
            $output->writeln(sprintf('<comment>the job is still %s after %d s</comment>', $state, $wait));
            return Command::FAILURE;
        }
        return Command::SUCCESS;
    }

    private function describe(ReindexResponse $response): string
    {
        return $response->status > 0 ? sprintf('HTTP %d, %s', $response->status, $response->error) : $response->error;
    }
}
